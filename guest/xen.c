/*
 * xen.c - Xen detection and hypercalls for the hello guest.
 *
 * The guest runs in long mode (see entry.S), so hypercalls use the 64-bit
 * ABI: number selects a 32-byte stub in the hypercall page, arguments in
 * %rdi, %rsi, %rdx, %r10, %r8, result in %rax.
 */
#include "xen.h"

extern uint8_t hypercall_page[4096];

static void
wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v),
	    "d"((uint32_t)(v >> 32)) : "memory");
}

/*
 * Xen's leaves sit at the first 0x100-aligned base from 0x40000000 that
 * carries the "XenVMMXenVMM" signature (Viridian, if enabled, takes
 * 0x40000000 itself).
 */
static uint32_t
find_base(void)
{
	uint32_t r[4];
	uint32_t base;

	for (base = XEN_CPUID_FIRST_LEAF; base < XEN_CPUID_FIRST_LEAF + 0x10000;
	    base += 0x100) {
		xg_cpuid(base, 0, r);
		if (r[1] == XEN_CPUID_SIGNATURE_EBX &&
		    r[2] == XEN_CPUID_SIGNATURE_ECX &&
		    r[3] == XEN_CPUID_SIGNATURE_EDX && r[0] - base >= 2)
			return base;
	}
	return 0;
}

int
xg_init(struct xg_info *info)
{
	uint32_t r[4];

	info->base = find_base();
	info->have_domid = false;
	info->domid = 0;
	if (info->base == 0)
		return -1;
	xg_cpuid(info->base + 1, 0, r);
	info->version = r[0];

	/* Leaf 3: EBX is the MSR that takes the hypercall page's address. */
	xg_cpuid(info->base + 2, 0, r);
	if (r[0] < 1)
		return -1;
	wrmsr(r[1], (uint64_t)(uintptr_t)hypercall_page);

	/* Leaf 5 (HVM features): the domain id when the flag says so. */
	xg_cpuid(info->base, 0, r);
	if (r[0] >= info->base + 4) {
		xg_cpuid(info->base + 4, 0, r);
		if (r[0] & XEN_HVM_CPUID_DOMID_PRESENT) {
			info->have_domid = true;
			info->domid = r[2];
		}
	}
	return 0;
}

static long
hcall2(unsigned int nr, unsigned long a1, unsigned long a2)
{
	register unsigned long rdi __asm__("rdi") = a1;
	register unsigned long rsi __asm__("rsi") = a2;
	long ret;

	__asm__ volatile("call *%[stub]"
	    : "=a"(ret), "+r"(rdi), "+r"(rsi)
	    : [stub] "r"(hypercall_page + nr * 32)
	    : "memory", "rcx", "rdx", "r8", "r9", "r10", "r11");
	return ret;
}

long
xg_sched_shutdown(unsigned int reason)
{
	struct sched_shutdown arg = { .reason = reason };

	return hcall2(__HYPERVISOR_sched_op, SCHEDOP_shutdown,
	    (unsigned long)&arg);
}

long
xg_hvm_get_param(uint32_t index, uint64_t *ret_value)
{
	struct xen_hvm_param arg = { .domid = DOMID_SELF, .index = index };
	long rc;

	rc = hcall2(__HYPERVISOR_hvm_op, HVMOP_get_param, (unsigned long)&arg);
	if (rc == 0)
		*ret_value = arg.value;
	return rc;
}

long
xg_evtchn_send(uint32_t port)
{
	struct evtchn_send arg = { .port = port };

	return hcall2(__HYPERVISOR_event_channel_op, EVTCHNOP_send,
	    (unsigned long)&arg);
}

long
xg_memory_map(struct e820entry_guest *buf, unsigned int *nr)
{
	struct xen_memory_map arg = { .nr_entries = *nr };
	long rc;

	set_xen_guest_handle(arg.buffer, buf);
	rc = hcall2(__HYPERVISOR_memory_op, XENMEM_memory_map,
	    (unsigned long)&arg);
	if (rc == 0)
		*nr = arg.nr_entries;
	return rc;
}
