/*
 * test_loader.c - the PVH ELF loader: parsing (good, truncated, corrupt
 * images), and loading into guest memory through a backend whose map op
 * points into a plain buffer, so what the guest would see can be read.
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmb_internal.h"
#include "hellopath.h"

#define LOAD_ADDR	0x100000u
#define ENTRY		(LOAD_ADDR + 0x10)
#define CODE_SIZE	0x300u
#define BSS_SIZE	0x2000u

/* Options for the test image. */
struct img_opts {
	bool	elf32;
	bool	no_note;
	bool	note_in_section_only;
	uint32_t note_descsz;	/* 4 or 8 normally */
	uint32_t entry;
	bool	overlap;	/* a second PT_LOAD overlapping the first */
	bool	filesz_gt_memsz;
};

struct note_blob {
	uint32_t namesz, descsz, type;
	char	name[4];
	uint8_t	desc[8];
};

/* Build an ELF image in memory; returns its length. */
static size_t
make_elf(uint8_t *buf, size_t cap, const struct img_opts *o)
{
	size_t ehsz = o->elf32 ? sizeof(Elf32_Ehdr) : sizeof(Elf64_Ehdr);
	size_t phsz = o->elf32 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr);
	size_t shsz = o->elf32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);
	uint16_t phnum = 1 + (o->no_note || o->note_in_section_only ? 0 : 1) +
	    (o->overlap ? 1 : 0);
	size_t phoff = ehsz, note_off = phoff + phnum * phsz;
	struct note_blob note = { 4, o->note_descsz ? o->note_descsz : 4,
	    VMB_XEN_ELFNOTE_PHYS32_ENTRY, "Xen", { 0 } };
	size_t note_len = 12 + 4 + ((note.descsz + 3) & ~3u);
	size_t code_off = (note_off + note_len + 15) & ~15u;
	size_t shoff = code_off + CODE_SIZE;
	size_t len = shoff + (o->note_in_section_only ? 2 * shsz : 0);
	uint32_t entry = o->entry ? o->entry : ENTRY;
	uint16_t i = 0;

	assert_true(len <= cap);
	memset(buf, 0, len);
	memcpy(note.desc, &entry, 4);
	memcpy(buf + note_off, &note, 16 + note.descsz);
	for (size_t k = 0; k < CODE_SIZE; k++)
		buf[code_off + k] = (uint8_t)(k * 7 + 1);
	memcpy(buf, ELFMAG, SELFMAG);
	buf[EI_DATA] = ELFDATA2LSB;
	buf[EI_VERSION] = EV_CURRENT;
#define PH(type_, off_, addr_, fsz_, msz_) do { \
	if (o->elf32) { \
		Elf32_Phdr p = { .p_type = type_, .p_offset = off_, \
		    .p_paddr = addr_, .p_vaddr = addr_, .p_filesz = fsz_, \
		    .p_memsz = msz_ }; \
		memcpy(buf + phoff + i * phsz, &p, sizeof(p)); \
	} else { \
		Elf64_Phdr p = { .p_type = type_, .p_offset = off_, \
		    .p_paddr = addr_, .p_vaddr = addr_, .p_filesz = fsz_, \
		    .p_memsz = msz_ }; \
		memcpy(buf + phoff + i * phsz, &p, sizeof(p)); \
	} \
	i++; } while (0)
	PH(PT_LOAD, code_off, LOAD_ADDR, o->filesz_gt_memsz ? CODE_SIZE + 1 :
	    CODE_SIZE, o->filesz_gt_memsz ? CODE_SIZE : CODE_SIZE + BSS_SIZE);
	if (!o->no_note && !o->note_in_section_only)
		PH(PT_NOTE, note_off, 0, note_len, note_len);
	if (o->overlap)
		PH(PT_LOAD, code_off, LOAD_ADDR + 0x1000, 0x10, 0x10);
#undef PH
	if (o->elf32) {
		Elf32_Ehdr eh = { .e_type = ET_EXEC, .e_machine = EM_386,
		    .e_version = EV_CURRENT, .e_entry = LOAD_ADDR,
		    .e_phoff = (Elf32_Off)phoff, .e_ehsize = (Elf32_Half)ehsz,
		    .e_phentsize = (Elf32_Half)phsz, .e_phnum = phnum };

		buf[EI_CLASS] = ELFCLASS32;
		memcpy(eh.e_ident, buf, EI_NIDENT);
		if (o->note_in_section_only) {
			Elf32_Shdr sh = { .sh_type = SHT_NOTE,
			    .sh_offset = (Elf32_Off)note_off,
			    .sh_size = (Elf32_Word)note_len };

			eh.e_shoff = (Elf32_Off)shoff;
			eh.e_shentsize = (Elf32_Half)shsz;
			eh.e_shnum = 2;
			memcpy(buf + shoff + shsz, &sh, sizeof(sh));
		}
		memcpy(buf, &eh, sizeof(eh));
	} else {
		Elf64_Ehdr eh = { .e_type = ET_EXEC, .e_machine = EM_X86_64,
		    .e_version = EV_CURRENT, .e_entry = LOAD_ADDR,
		    .e_phoff = phoff, .e_ehsize = (Elf64_Half)ehsz,
		    .e_phentsize = (Elf64_Half)phsz, .e_phnum = phnum };

		buf[EI_CLASS] = ELFCLASS64;
		memcpy(eh.e_ident, buf, EI_NIDENT);
		if (o->note_in_section_only) {
			Elf64_Shdr sh = { .sh_type = SHT_NOTE,
			    .sh_offset = note_off, .sh_size = note_len };

			eh.e_shoff = shoff;
			eh.e_shentsize = (Elf64_Half)shsz;
			eh.e_shnum = 2;
			memcpy(buf + shoff + shsz, &sh, sizeof(sh));
		}
		memcpy(buf, &eh, sizeof(eh));
	}
	return len;
}

static uint8_t image[8192];

static void
test_parse_good(void **state)
{
	struct img_opts o = { 0 };
	struct vmb__elf elf;
	size_t len;

	(void)state;
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), 0);
	assert_true(elf.is64);
	assert_int_equal(elf.entry, ENTRY);
	assert_int_equal(elf.nr_segs, 1);
	assert_int_equal(elf.low, LOAD_ADDR);
	assert_int_equal(elf.high, LOAD_ADDR + CODE_SIZE + BSS_SIZE);

	o.elf32 = true;
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), 0);
	assert_false(elf.is64);
	assert_int_equal(elf.entry, ENTRY);

	o.note_in_section_only = true;
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), 0);
	o.elf32 = false;
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), 0);
	assert_int_equal(elf.entry, ENTRY);

	o = (struct img_opts){ .note_descsz = 8 };
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), 0);
	assert_int_equal(elf.entry, ENTRY);
}

static void
test_parse_bad(void **state)
{
	struct img_opts o = { 0 };
	struct vmb__elf elf;
	size_t len, full;

	(void)state;
	/* Every truncation fails cleanly. */
	full = make_elf(image, sizeof(image), &o);
	for (len = 0; len < full - CODE_SIZE; len++)
		assert_true(vmb__elf_parse(image, len, &elf) < 0);
	for (; len < full; len++)
		assert_int_equal(vmb__elf_parse(image, len, &elf), -EINVAL);

	o = (struct img_opts){ .no_note = true };
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), -ENOEXEC);

	o = (struct img_opts){ .note_descsz = 3 };
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), -EINVAL);

	o = (struct img_opts){ .overlap = true };
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), -EINVAL);

	o = (struct img_opts){ .filesz_gt_memsz = true };
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), -EINVAL);

	o = (struct img_opts){ .entry = 0x42 };	/* not in a segment */
	len = make_elf(image, sizeof(image), &o);
	assert_int_equal(vmb__elf_parse(image, len, &elf), -EINVAL);

	o = (struct img_opts){ 0 };
	len = make_elf(image, sizeof(image), &o);
	image[EI_CLASS] = 7;
	assert_int_equal(vmb__elf_parse(image, len, &elf), -ENOEXEC);
	assert_int_equal(vmb__elf_parse("#!/bin/sh\n", 10, &elf), -ENOEXEC);
}

/* Random corruption must never crash or read out of bounds. */
/*
 * What the loader relies on after a successful parse: every segment's
 * bytes lie within the image, below 4 GiB, without overlap, and the
 * entry point is in one of them.
 */
static void
assert_elf_sane(const struct vmb__elf *elf, size_t len)
{
	bool entry_in = false;

	assert_true(elf->nr_segs >= 1 && elf->nr_segs <= VMB_ELF_MAX_SEGS);
	assert_true(elf->low < elf->high && elf->high <= (1ull << 32));
	for (uint32_t i = 0; i < elf->nr_segs; i++) {
		const struct vmb__elf_seg *s = &elf->segs[i];

		assert_true(s->filesz <= s->memsz && s->memsz > 0);
		assert_true(s->offset <= len && s->filesz <= len - s->offset);
		assert_true(s->paddr >= elf->low &&
		    s->paddr + s->memsz <= elf->high);
		for (uint32_t j = 0; j < i; j++)
			assert_true(s->paddr >= elf->segs[j].paddr +
			    elf->segs[j].memsz || elf->segs[j].paddr >=
			    s->paddr + s->memsz);
		if (elf->entry >= s->paddr && elf->entry < s->paddr + s->memsz)
			entry_in = true;
	}
	assert_true(entry_in);
}

static void
test_parse_fuzz(void **state)
{
	struct img_opts o = { 0 };
	struct vmb__elf elf, poison;
	static uint8_t copy[8192];
	unsigned seed = 4242, accepted = 0, refused = 0;
	size_t len;

	(void)state;
	len = make_elf(image, sizeof(image), &o);
	memset(&poison, 0xa5, sizeof(poison));
	for (int iter = 0; iter < 20000; iter++) {
		int flips = 1 + rand_r(&seed) % 8, rc;
		uint8_t *heap;

		memcpy(copy, image, len);
		for (int f = 0; f < flips; f++) {
			/* Mostly the headers and the note, where it matters. */
			size_t at = (size_t)rand_r(&seed) % (rand_r(&seed) % 4 ?
			    256 : len);

			copy[at] = (uint8_t)rand_r(&seed);
		}
		/* A heap copy of exact length lets sanitizers see overreads. */
		heap = malloc(len);
		assert_non_null(heap);
		memcpy(heap, copy, len);
		elf = poison;
		rc = vmb__elf_parse(heap, len, &elf);
		free(heap);
		if (rc == 0) {
			assert_elf_sane(&elf, len);
			accepted++;
			continue;
		}
		/* Refused as not a PVH ELF or as malformed; nothing written. */
		assert_true(rc == -ENOEXEC || rc == -EINVAL);
		assert_memory_equal(&elf, &poison, sizeof(elf));
		refused++;
	}
	/* The mutations took both ways (else the loop tested little). */
	assert_true(accepted > 0 && refused > 0);
	print_message("# fuzz: %u accepted, %u refused\n", accepted, refused);
}

/* A backend whose guest memory is a buffer. */
#define GUEST_BYTES	(4u << 20)
static uint8_t *guest_mem;
static int maps_outstanding;

static int
buf_map(void *priv, uint32_t domid, uint64_t gfn, size_t nr, void **ret)
{
	(void)priv;
	(void)domid;
	if ((gfn + nr) << 12 > GUEST_BYTES)
		return -EFAULT;
	*ret = guest_mem + (gfn << 12);
	maps_outstanding++;
	return 0;
}

static void
buf_unmap(void *priv, void *addr, size_t nr)
{
	(void)priv;
	(void)addr;
	(void)nr;
	maps_outstanding--;
}

static const struct vmb_backend_ops buf_ops = {
	.name = "buf", .map = buf_map, .unmap = buf_unmap,
};
static const struct vmb_backend_ops nomap_ops = { .name = "nomap" };

static char *
write_temp(const void *data, size_t len)
{
	char *path = strdup("/tmp/vmb-loader-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

static void
test_load(void **state)
{
	struct img_opts o = { 0 };
	struct vmb_guest g;
	struct vmb__image *img = NULL;
	struct vmb_boot boot;
	static const char rd[] = "ramdisk contents";
	char *kpath, *rpath;
	size_t len, code_off;
	uint32_t u32;
	uint64_t u64, cmd, mods, mmap;

	(void)state;
	len = make_elf(image, sizeof(image), &o);
	code_off = len - CODE_SIZE;
	kpath = write_temp(image, len);
	rpath = write_temp(rd, sizeof(rd));
	memset(&g, 0, sizeof(g));
	g.kernel = kpath;
	g.ramdisk = rpath;
	g.cmdline = (char *)"console=hvc0 loglevel=8";
	assert_int_equal(vmb__image_open(&g, &img), 0);
	assert_int_equal(vmb__image_entry(img), ENTRY);

	guest_mem = malloc(GUEST_BYTES);
	memset(guest_mem, 0xaa, GUEST_BYTES);
	assert_int_equal(vmb__image_load(&buf_ops, NULL, 1, img, GUEST_BYTES,
	    &boot), 0);
	assert_int_equal(maps_outstanding, 0);
	assert_int_equal(boot.entry, ENTRY);
	/* Code copied, .bss zeroed. */
	assert_memory_equal(guest_mem + LOAD_ADDR, image + code_off, CODE_SIZE);
	for (size_t k = 0; k < BSS_SIZE; k++)
		assert_int_equal(guest_mem[LOAD_ADDR + CODE_SIZE + k], 0);
	/* Start info after the kernel, page aligned. */
	assert_int_equal(boot.start_info % 4096, 0);
	assert_true(boot.start_info >= LOAD_ADDR + CODE_SIZE + BSS_SIZE);
	memcpy(&u32, guest_mem + boot.start_info, 4);
	assert_int_equal(u32, 0x336ec578);
	memcpy(&u32, guest_mem + boot.start_info + 4, 4);
	assert_int_equal(u32, 1);			/* version */
	memcpy(&u32, guest_mem + boot.start_info + 12, 4);
	assert_int_equal(u32, 1);			/* nr_modules */
	memcpy(&mods, guest_mem + boot.start_info + 16, 8);
	memcpy(&cmd, guest_mem + boot.start_info + 24, 8);
	memcpy(&u64, guest_mem + boot.start_info + 32, 8);
	assert_int_equal(u64, 0);			/* rsdp */
	memcpy(&mmap, guest_mem + boot.start_info + 40, 8);
	memcpy(&u32, guest_mem + boot.start_info + 48, 4);
	assert_int_equal(u32, 1);			/* memmap entries */
	assert_string_equal((char *)guest_mem + cmd, "console=hvc0 loglevel=8");
	memcpy(&u64, guest_mem + mods, 8);		/* module paddr */
	assert_int_equal(u64 % 4096, 0);
	assert_true(u64 > cmd);
	assert_memory_equal(guest_mem + u64, rd, sizeof(rd));
	memcpy(&u64, guest_mem + mods + 8, 8);
	assert_int_equal(u64, sizeof(rd));
	memcpy(&u64, guest_mem + mmap + 8, 8);	/* RAM size */
	assert_int_equal(u64, GUEST_BYTES);
	memcpy(&u32, guest_mem + mmap + 16, 4);
	assert_int_equal(u32, 1);			/* E820 RAM */

	/* Too little memory, and a backend that cannot map. */
	assert_int_equal(vmb__image_load(&buf_ops, NULL, 1, img, LOAD_ADDR,
	    &boot), -ENOSPC);
	assert_int_equal(vmb__image_load(&nomap_ops, NULL, 1, img, GUEST_BYTES,
	    &boot), -EOPNOTSUPP);
	vmb__image_free(img);

	/* A kernel without the note is refused before anything is built. */
	o.no_note = true;
	len = make_elf(image, sizeof(image), &o);
	unlink(kpath);
	free(kpath);
	kpath = write_temp(image, len);
	g.kernel = kpath;
	assert_int_equal(vmb__image_open(&g, &img), -ENOEXEC);
	unlink(kpath);
	unlink(rpath);
	free(kpath);
	free(rpath);
	free(guest_mem);
}

/* The test kernel the build produces, when it is there. */
static void
test_hello_elf(void **state)
{
	struct vmb_guest g;
	struct vmb__image *img = NULL;
	const char *path = hello_elf_path();

	(void)state;
	if (access(path, R_OK) != 0)
		skip();
	memset(&g, 0, sizeof(g));
	g.kernel = (char *)path;
	assert_int_equal(vmb__image_open(&g, &img), 0);
	assert_true(vmb__image_entry(img) != 0);
	vmb__image_free(img);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_fuzz),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_hello_elf),
	};

	return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
