/*
 * vmstate.c - the VM states and their legal transitions (vmstate.h).
 */
#include "vmstate.h"

#define B(s)	(1u << (s))
/* Its domain's states: reached from each other as the hypervisor says. */
#define DOMAIN	(B(VM_RUNNING) | B(VM_BLOCKED) | B(VM_PAUSED) | \
		 B(VM_SHUTDOWN) | B(VM_DYING) | B(VM_CRASHED))

static const struct {
	const char	*name;		/* as the protocol shows it */
	unsigned	to;		/* the states it may go to */
} states[VM_STATE_NR] = {
	/*
	 * A record's VM whose domain is not listed: its domain is seen, a
	 * restart left half done is built, an interrupted build's domain
	 * is destroyed.
	 */
	[VM_UNKNOWN] = { "unknown",
	    DOMAIN | B(VM_BUILDING) | B(VM_DESTROYING) },
	/* Built (its domain, or none seen yet), or failed and not undone. */
	[VM_BUILDING] = { "building",
	    DOMAIN | B(VM_UNKNOWN) | B(VM_DESTROYING) },
	/* Each: any other, rebuilt by a restart, or destroyed by reap.c. */
	/* The three a save starts from (save.c's stream_vm_check()). */
	[VM_RUNNING] = { "running",
	    DOMAIN | B(VM_BUILDING) | B(VM_DESTROYING) | B(VM_SAVING) },
	[VM_BLOCKED] = { "blocked",
	    DOMAIN | B(VM_BUILDING) | B(VM_DESTROYING) | B(VM_SAVING) },
	[VM_PAUSED] = { "paused",
	    DOMAIN | B(VM_BUILDING) | B(VM_DESTROYING) | B(VM_SAVING) },
	[VM_SHUTDOWN] = { "shutdown",
	    DOMAIN | B(VM_BUILDING) | B(VM_DESTROYING) },
	[VM_DYING] = { "dying", DOMAIN | B(VM_BUILDING) | B(VM_DESTROYING) },
	[VM_CRASHED] = { "crashed", DOMAIN | B(VM_BUILDING) | B(VM_DESTROYING) },
	/* Until the VM leaves the registry. */
	[VM_DESTROYING] = { "destroying", 0 },
	/*
	 * A save runs (save.c): its domain's own moves (the save pauses it)
	 * do not show.  A failed or cancelled save, or a checkpoint, ends
	 * in the domain's state; a save done leaves the registry.
	 */
	[VM_SAVING] = { "saving", DOMAIN },
};

const char *
vm_state_str(enum vm_state s)
{
	if ((unsigned)s >= VM_STATE_NR)
		return "unknown";
	return states[s].name;
}

bool
vm_state_legal(enum vm_state from, enum vm_state to)
{
	if ((unsigned)from >= VM_STATE_NR || (unsigned)to >= VM_STATE_NR)
		return false;
	return from == to || (states[from].to & B(to)) != 0;
}

enum vm_state
vm_state_of_domain(enum vmb_domain_state d)
{
	switch (d) {
	case VMB_DOM_RUNNING:
		return VM_RUNNING;
	case VMB_DOM_BLOCKED:
		return VM_BLOCKED;
	case VMB_DOM_PAUSED:
		return VM_PAUSED;
	case VMB_DOM_SHUTDOWN:
		return VM_SHUTDOWN;
	case VMB_DOM_DYING:
		return VM_DYING;
	case VMB_DOM_CRASHED:
		return VM_CRASHED;
	}
	return VM_UNKNOWN;
}

bool
vm_state_is_domain(enum vm_state s)
{
	return (unsigned)s < VM_STATE_NR && (DOMAIN & B(s)) != 0;
}
