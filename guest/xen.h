/*
 * xen.h - what the hello guest needs of Xen: CPUID leaves, the hypercall
 * page, and a few hypercalls (prefix xg_).  Numbers and layouts come from
 * Xen's public headers (libxen-dev), included here and nowhere else.
 */
#ifndef GUEST_XEN_H
#define GUEST_XEN_H

#include <stdbool.h>
#include <stdint.h>

/* Without it the headers select pre-3.2 hypercall numbers (sched_op_compat). */
#define __XEN_INTERFACE_VERSION__ 0x00040e00
#include <xen/xen.h>
#include <xen/arch-x86/cpuid.h>
#include <xen/arch-x86/hvm/start_info.h>
#include <xen/event_channel.h>
#include <xen/hvm/hvm_op.h>
#include <xen/hvm/params.h>
#include <xen/io/console.h>
#include <xen/memory.h>
#include <xen/sched.h>

struct xg_info {
	uint32_t base;		/* first Xen CPUID leaf, 0 if not on Xen */
	uint32_t version;	/* major << 16 | minor */
	bool	 have_domid;
	uint32_t domid;
};

/* One e820 entry as XENMEM_memory_map returns it (packed, 20 bytes). */
struct e820entry_guest {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
} __attribute__((packed));

/* Find Xen's CPUID leaves and install the hypercall page: 0 or -1. */
int xg_init(struct xg_info *info);

long xg_sched_shutdown(unsigned int reason);
long xg_hvm_get_param(uint32_t index, uint64_t *ret_value);
long xg_evtchn_send(uint32_t port);
long xg_memory_map(struct e820entry_guest *buf, unsigned int *nr);


/* CPUID: in a PVH guest Xen always intercepts it (an exit to Xen). */
static inline void
xg_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid"
	    : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
	    : "a"(leaf), "c"(sub));
}

static inline void
xg_outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

#endif /* GUEST_XEN_H */
