/*
 * console.c - vm.console (see console.h).
 *
 * The daemon opens the pty xenconsoled made for the guest and passes
 * the descriptor to the client with the reply (SCM_RIGHTS); from then
 * on the client reads and writes the console itself, as xl console
 * does.  Why not relay the bytes: the daemon would then act for the
 * client on every keystroke, hold buffers for a client that reads
 * slowly, and put a chatty guest's output on the loop that answers
 * everyone else.  The client's rights are checked once, as for any
 * method that changes a VM (a console is control of the guest: root
 * and group vmbuild), and what it gets is that one terminal and nothing
 * else: the pty is root's (mode 0620), the path comes from the domain's
 * console directory in xenstore, read only if no domain but dom0 and
 * the console's backend may write it (one another toolstack built may
 * let the guest: then refused), and libvmbuild opens it only if it is
 * a /dev/pts slave.  A
 * descriptor cannot be taken back: a client keeps its console until it
 * detaches (or the domain goes), as with any file it opened.
 *
 * One client at a time per VM, as xenconsole's lock file does it: the
 * VM remembers the connection holding its console, free again when that
 * connection closes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "console.h"
#include "control.h"
#include "dm.h"
#include "json.h"
#include "log.h"
#include "params.h"
#include "proto.h"
#include "rpc.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

struct console_job {
	struct job	job;
	struct call	*call;
	uint8_t		uuid[16];
	char		vm[VMB_NAME_LEN];
	uint32_t	domid;
	bool		hvm;	/* its serial port is the device model's */
	int		rc;
	int		fd;
	char		tty[128];
};

static void
console_run(struct job *job)
{
	struct console_job *cj = (struct console_job *)job;

	if (cj->hvm)
		cj->rc = dm_console_open(cj->domid, &cj->fd, cj->tty,
		    sizeof(cj->tty));
	else
		cj->rc = vmb_console_open(vmbd.ctx, cj->domid, &cj->fd,
		    cj->tty, sizeof(cj->tty));
}

static int
console_error(struct console_job *cj)
{
	struct call *call = cj->call;

	if (cj->hvm && (cj->rc == -ENOENT || cj->rc == -ESRCH))
		return call_error(call, E_UNAVAILABLE, -cj->rc, "%s (domain %u) "
		    "has no serial console: %s", cj->vm, cj->domid,
		    cj->rc == -ENOENT ? "its device model has no serial port "
		    "(serial = \"pty\" gives it one)" : "no device model runs "
		    "for it");
	if (cj->hvm && cj->rc != -EPERM)
		return call_error(call, E_HYPERVISOR, -cj->rc, "cannot ask the "
		    "device model of %s (domain %u) for its serial port: %s",
		    cj->vm, cj->domid, strerror(-cj->rc));
	switch (-cj->rc) {
	case EOPNOTSUPP:
		return call_error(call, E_UNAVAILABLE, -cj->rc, "%s has no "
		    "console: the hypervisor (%s) runs no guest code", cj->vm,
		    vmb_ctx_hypervisor(vmbd.ctx));
	case ENOENT:
		return call_error(call, E_UNAVAILABLE, -cj->rc, "%s (domain "
		    "%u) has no console pty: xenconsoled has made none (is it "
		    "running?)", cj->vm, cj->domid);
	case EACCES:
		return call_error(call, E_HYPERVISOR, -cj->rc, "the console "
		    "of %s (domain %u) is not trusted: a domain other than "
		    "dom0 and xenconsoled's may write its console/tty in "
		    "xenstore (a toolstack other than vmbuild built it?), so "
		    "it could name any host device: not opened", cj->vm,
		    cj->domid);
	case EPERM:
		return call_error(call, E_HYPERVISOR, -cj->rc, "xenstore "
		    "names something other than a pty as the console of %s "
		    "(domain %u): not opened", cj->vm, cj->domid);
	case ESRCH:
		return call_error(call, E_NO_SUCH_VM, -cj->rc, "domain %u no "
		    "longer exists", cj->domid);
	default:
		return call_error(call, E_HYPERVISOR, -cj->rc, "console of %s: "
		    "%s", cj->vm, strerror(-cj->rc));
	}
}

static void
console_done(struct job *job)
{
	struct console_job *cj = (struct console_job *)job;
	struct conn *c = cj->call->conn;
	struct vm *vm = vm_find_uuid(cj->uuid);
	unsigned serial = c->serial, uid = (unsigned)c->uid;
	int pid = (int)c->pid;
	yajl_gen g;
	int rc;

	if (cj->rc < 0) {
		console_error(cj);
		call_fail(cj->call);
		free(cj);
		return;
	}
	if (vm != NULL && !c->closed) {
		conn_unref(vm->console);
		vm->console = conn_ref(c);
	}
	g = jg_new();
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", cj->vm);
	jg_kv_u64(g, "id", cj->domid);
	jg_kv_str(g, "tty", cj->tty);
	yajl_gen_map_close(g);
	/* The call holds the connection: c is not to be used after it. */
	rc = call_reply_fd(cj->call, g, cj->fd);
	yajl_gen_free(g);
	if (rc < 0 && rc != -EPIPE)
		log_vm(LOG_WARNING, cj->vm, cj->domid, 0, "console of %s: "
		    "cannot pass it to conn %u: %s", cj->vm, serial,
		    strerror(-rc));
	else if (rc == 0)
		log_vm(LOG_INFO, cj->vm, cj->domid, 0, "console of %s (%s) "
		    "attached by conn %u (pid %d, uid %u)", cj->vm, cj->tty,
		    serial, pid, uid);
	close(cj->fd);
	free(cj);
}

int
m_vm_console(struct call *call, yajl_gen g)
{
	struct vm *vm = vm_param(call);
	struct console_job *cj;
	struct conn *held;

	(void)g;
	if (vm == NULL)
		return -1;
	if (vm->state == VM_BUILDING)
		return call_error(call, E_BAD_STATE, 0, "%s is being built "
		    "(task %llu); its console comes with its domain", vm->name,
		    (unsigned long long)vm->task);
	if (!vm->have_dom || vm->restart)
		return call_error(call, E_BAD_STATE, 0, "%s has no domain now",
		    vm->name);
	if (vm->state == VM_DESTROYING)
		return call_error(call, E_BAD_STATE, 0, "%s is being destroyed "
		    "(its build failed and could not be undone)", vm->name);
	held = vm->console;
	if (held != NULL && !held->closed && held != call->conn)
		return call_error(call, E_BUSY, 0, "the console of %s is "
		    "attached (pid %d, uid %u): it is free again when that "
		    "client detaches", vm->name, (int)held->pid,
		    (unsigned)held->uid);
	cj = calloc(1, sizeof(*cj));
	if (cj == NULL)
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	cj->call = call;
	memcpy(cj->uuid, vm->uuid, 16);
	snprintf(cj->vm, sizeof(cj->vm), "%s", vm->name);
	cj->domid = vm->domid;
	cj->hvm = vm->guest != NULL && vm->guest->type == VMB_GUEST_HVM;
	cj->fd = -1;
	cj->job.run = console_run;
	cj->job.done = console_done;
	worker_submit(&cj->job);
	return CALL_DEFERRED;
}
