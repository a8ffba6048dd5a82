/*
 * status.c - "the daemon's figures changed" (vmbuildd.h).  The registry,
 * the tasks and the methods say so when a VM, a build or a client comes
 * or goes; main.c, which knows what its status line counts, is the hook
 * (vmbd_status_hook), so that no file below it calls up into main.c.
 */
#include <stddef.h>

#include "vmbuildd.h"

static void (*status_hook)(void);

void
vmbd_status_hook(void (*fn)(void))
{
	status_hook = fn;
}

void
vmbd_status_changed(void)
{
	/* None before main.c sets it, nor in the fuzz targets' daemon. */
	if (status_hook != NULL)
		status_hook();
}
