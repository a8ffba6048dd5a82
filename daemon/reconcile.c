/*
 * reconcile.c - the registry at start, from the records and the
 * hypervisor's list (see reconcile.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dm.h"
#include "log.h"
#include "reconcile.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"

/* A restart whose new domain is still to be built (the old one gone). */
static int
vm_restart_pending(struct state_record *rec)
{
	char u[VMB_UUID_STRLEN];
	struct vm *vm = vm_add_record(rec, NULL);

	if (vm == NULL)
		return -ENOMEM;
	vm->domid = VMB_DOMID_INVALID;
	vmb_uuid_to_str(rec->uuid, u);
	log_vm(LOG_NOTICE, rec->name, VMB_DOMID_INVALID, 0, "%s (%s) was being "
	    "restarted: its new domain is built once the daemon runs",
	    rec->name, u);
	return 0;
}

/*
 * A record "building": its build was interrupted.  Destroy the domain
 * now if there is one; what will not go is reaped once the loop runs.
 * Without the hypervisor's list (dom_known false) nothing is known yet.
 */
static int
vm_reconcile_building(struct state_record *rec, struct vmb_domain *dom,
    bool dom_known)
{
	char u[VMB_UUID_STRLEN];
	struct vm *vm;
	int rc = 0;

	vmb_uuid_to_str(rec->uuid, u);
	if (dom_known && dom == NULL) {
		log_vm(LOG_NOTICE, rec->name, VMB_DOMID_INVALID, 0,
		    "%s (%s): its build was interrupted before the domain "
		    "existed", rec->name, u);
		/* A restart's build is tried again; a create's not. */
		if (rec->restart)
			return vm_restart_pending(rec);
		(void)state_remove(rec->uuid);
		return 0;
	}
	/* Its device model, if the build had started it. */
	if (rec->dm.pid > 0)
		dm_kill_recorded(&rec->dm, dom != NULL ? dom->domid :
		    VMB_DOMID_INVALID, rec->name);
	if (dom != NULL) {
		log_vm(LOG_NOTICE, rec->name, dom->domid, 0, "destroying %s "
		    "(domain %u, %s): its build was interrupted", rec->name,
		    dom->domid, u);
		rc = vmb_domain_destroy(vmbd.ctx, dom->domid);
		if ((rc == 0 || rc == -ESRCH) && rec->restart)
			return vm_restart_pending(rec);
		if (rc == 0 || rc == -ESRCH) {
			(void)state_remove(rec->uuid);
			return 0;
		}
		log_vm(LOG_WARNING, rec->name, dom->domid, 0, "cannot destroy "
		    "domain %u: %s; trying again once started", dom->domid,
		    strerror(-rc));
	}
	vm = vm_add_record(rec, dom);
	if (vm == NULL)
		return -ENOMEM;
	/* reap.c destroys it once the loop runs (reap_start_pending). */
	return vm_state_set(vm, VM_DESTROYING);
}

/*
 * A built HVM guest's device model: taken back if it still runs, else
 * the guest is crashed now, as if it had died under this daemon (the
 * domain read again: lifecycle.c applies on_crash once it starts).
 */
static void
vm_reconcile_dm(struct state_record *rec, struct vmb_domain *dom)
{
	int rc;

	if (rec->dm.pid <= 0 || dom == NULL)
		return;
	rc = dm_adopt(&rec->dm, dom->domid, rec->name);
	if (rc == 0)
		return;
	log_vm(LOG_ERR, rec->name, dom->domid, 0, "%s: its device model "
	    "(pid %d) is gone (%s) while the daemon was not running: the "
	    "guest is crashed", rec->name, rec->dm.pid, rc == -ESRCH ?
	    "no such process, or another one with its pid" : strerror(-rc));
	(void)unlink(rec->dm.qmp);
	rc = vmb_domain_shutdown(vmbd.ctx, dom->domid, VMB_SHUTDOWN_CRASH);
	if (rc == 0)
		rc = vmb_domain_get(vmbd.ctx, dom->domid, dom);
	if (rc < 0 && rc != -ESRCH)
		log_vm(LOG_ERR, rec->name, dom->domid, 0, "%s: cannot crash "
		    "domain %u: %s", rec->name, dom->domid, strerror(-rc));
}

int
vm_reconcile(void)
{
	struct state_record *recs = NULL;
	struct vmb_domain *doms = NULL;
	size_t nrecs = 0, ndoms = 0;
	bool *matched = NULL, listed;
	struct vmb_domain dom0;
	int rc, rc_dom0;

	rc = state_load_all(&recs, &nrecs);
	if (rc < 0) {
		log_errx("cannot read the state directory: %s", strerror(-rc));
		goto out;
	}
	rc = vmb_domain_list(vmbd.ctx, &doms, &ndoms);
	listed = rc == 0;
	if (!listed) {
		/* Not fatal: a crash loop would help nobody.  Later. */
		log_errx("cannot list domains: %s; starting without the "
		    "hypervisor's view (%zu records), reconciling once it "
		    "answers", strerror(-rc), nrecs);
		vm_set_backend_up(false);
		ndoms = 0;
	}
	rc_dom0 = vmb_control_domain(vmbd.ctx, &dom0);
	vm_set_dom0(rc_dom0, &dom0);
	matched = calloc(ndoms + 1, sizeof(*matched));
	if (matched == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t r = 0; r < nrecs; r++) {
		struct state_record *rec = &recs[r];
		struct vmb_domain *dom = NULL;
		char u[VMB_UUID_STRLEN];

		vmb_uuid_to_str(rec->uuid, u);
		for (size_t d = 0; d < ndoms; d++) {
			if (!matched[d] &&
			    memcmp(doms[d].uuid, rec->uuid, 16) == 0) {
				dom = &doms[d];
				matched[d] = true;
			}
		}
		if (!rec->built) {
			rc = vm_reconcile_building(rec, dom, listed);
			if (rc < 0)
				goto out;
			continue;
		}
		/* A restart whose new domain was not built yet goes on. */
		if (listed && dom == NULL && !rec->restart) {
			log_vm(LOG_NOTICE, rec->name, VMB_DOMID_INVALID, 0,
			    "%s (%s) no longer exists, forgetting it",
			    rec->name, u);
			(void)state_remove(rec->uuid);
			continue;
		}
		if (listed && dom == NULL) {
			rc = vm_restart_pending(rec);
			if (rc < 0)
				goto out;
			continue;
		}
		vm_reconcile_dm(rec, dom);
		if (vm_add_record(rec, dom) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t d = 0; d < ndoms; d++) {
		if (matched[d])
			continue;
		if (vm_add_foreign(&doms[d]) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
	}
	log_info("%u domains after reconciliation%s", vm_count(), listed ? "" :
	    " (from records only: the hypervisor does not answer)");
	rc = 0;
out:
	for (size_t r = 0; r < nrecs; r++)
		state_record_done(&recs[r]);
	free(recs);
	free(doms);
	free(matched);
	return rc;
}
