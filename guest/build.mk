# guest/build.mk - build/guest/hello.elf, the freestanding PVH test guest.
#
# It has its own flags, not ALL_CFLAGS: no libc, no sanitizers or -pthread
# from the host build, no SSE (no FPU state is set up), no red zone (the
# hypercall stubs are reached with `call`), and the same warnings as the
# rest of the tree.  Objects: build/obj/guest/ (a more specific pattern
# than the generic rule, so make picks this one).

GUEST_CC	?= $(CC)
GUEST_ELF	 = $(B)/guest/hello.elf
GUEST_SRCS	 = guest/entry.S guest/hello.c guest/xen.c guest/cons.c \
		   guest/mem.c guest/lib.c guest/ptw.c
GUEST_OBJS	 = $(patsubst guest/%,$(OBJ)/guest/%.o,$(basename $(GUEST_SRCS)))
GUEST_CFLAGS	 = -m64 -O2 -g -std=gnu11 -ffreestanding -fno-builtin \
		   -fno-pic -fno-pie -fno-stack-protector -fno-asynchronous-unwind-tables \
		   -fno-delete-null-pointer-checks -fcf-protection=none \
		   -mno-red-zone -mgeneral-regs-only -mcmodel=small -MMD -MP \
		   $(WARN)
GUEST_LDFLAGS	 = -m64 -nostdlib -static -no-pie -Wl,--no-dynamic-linker \
		   -Wl,-T,guest/hello.ld -Wl,--build-id=none -Wl,-z,max-page-size=4096 \
		   -Wl,-z,noexecstack -Wl,--no-warn-rwx-segments

ALL += $(GUEST_ELF)

$(OBJ)/guest/%.o: guest/%.c
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -c -o $@ $<

$(OBJ)/guest/%.o: guest/%.S
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -c -o $@ $<

$(GUEST_ELF): $(GUEST_OBJS) guest/hello.ld
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_LDFLAGS) -o $@ $(GUEST_OBJS)
