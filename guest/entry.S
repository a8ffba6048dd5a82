/*
 * entry.S - PVH entry of the hello guest, and the switch to long mode.
 *
 * Xen enters at the PHYS32_ENTRY note below in 32-bit protected mode,
 * paging off, flat segments, %ebx = guest-physical address of struct
 * hvm_start_info.  We identity-map the first 64 GiB with 2 MiB pages,
 * enter long mode and call hello_main(start_info_paddr) in C, so the C
 * code is ordinary x86-64 code and can reach memory above 4 GiB.
 */
#define XEN_ELFNOTE_PHYS32_ENTRY	18
#define MAP_GIB				64	/* identity map size */
#define NR_PD				MAP_GIB	/* one page directory per GiB */

	.section .note.Xen, "a", @note
	.balign 4
	.long	2f - 1f			/* namesz */
	.long	4f - 3f			/* descsz */
	.long	XEN_ELFNOTE_PHYS32_ENTRY
1:	.asciz	"Xen"
2:	.balign 4
3:	.long	pvh_entry32		/* 32-bit entry, guest physical */
4:	.balign 4

	.section .text.entry, "ax", @progbits
	.code32
	.globl	pvh_entry32
pvh_entry32:
	cli
	cld
	mov	%ebx, %esi		/* keep start_info across the setup */

	/* Zero .bss ourselves: a loader may leave it to Xen's scrubbing. */
	mov	$__bss_start, %edi
	mov	$__bss_end, %ecx
	sub	%edi, %ecx
	xor	%eax, %eax
	rep stosb

	/* PML4[0] -> PDPT */
	mov	$pdpt, %eax
	or	$0x3, %eax
	mov	%eax, pml4

	/* PDPT[i] -> PD[i], i < NR_PD */
	mov	$pd, %eax
	or	$0x3, %eax
	mov	$pdpt, %edi
	mov	$NR_PD, %ecx
1:	mov	%eax, (%edi)
	movl	$0, 4(%edi)
	add	$4096, %eax
	add	$8, %edi
	loop	1b

	/* PD entries: 2 MiB pages, present + writable + PS, identity */
	mov	$pd, %edi
	xor	%ecx, %ecx
2:	mov	%ecx, %eax
	shl	$21, %eax
	or	$0x83, %eax
	mov	%eax, (%edi)
	mov	%ecx, %eax
	shr	$11, %eax
	mov	%eax, 4(%edi)
	add	$8, %edi
	inc	%ecx
	cmp	$(NR_PD * 512), %ecx
	jne	2b

	mov	%cr4, %eax
	or	$0x20, %eax		/* CR4.PAE */
	mov	%eax, %cr4
	mov	$pml4, %eax
	mov	%eax, %cr3
	mov	$0xc0000080, %ecx	/* EFER */
	rdmsr
	or	$0x100, %eax		/* EFER.LME */
	wrmsr
	/*
	 * CR0.WP as every OS sets it: with WP clear, a shadow-paging Xen
	 * emulates every supervisor write that faults, page table or not.
	 */
	mov	%cr0, %eax
	or	$0x80010001, %eax	/* CR0.PG | CR0.WP | CR0.PE */
	mov	%eax, %cr0

	lgdt	gdt_desc
	ljmp	$0x08, $entry64

	.code64
entry64:
	mov	$0x10, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	mov	%eax, %fs
	mov	%eax, %gs
	mov	$stack_top, %rsp
	mov	%esi, %edi		/* zero-extends: start_info paddr */
	call	hello_main
3:	cli
	hlt
	jmp	3b

	.section .rodata
	.balign 8
gdt:
	.quad	0			/* null */
	.quad	0x00af9a000000ffff	/* 0x08: 64-bit code, DPL 0 */
	.quad	0x00cf92000000ffff	/* 0x10: flat data */
gdt_end:
gdt_desc:
	.word	gdt_end - gdt - 1
	.long	gdt

	.section .bss
	.balign 4096
	.globl	hypercall_page
hypercall_page:
	.skip	4096
pml4:
	.skip	4096
pdpt:
	.skip	4096
pd:
	.skip	4096 * NR_PD
	.balign 16
stack:
	.skip	16384
stack_top:
