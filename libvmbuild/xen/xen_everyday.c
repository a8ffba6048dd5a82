/*
 * xen_everyday.c - the everyday settings of a running domain on Xen, by
 * the calls libxl makes for them: the scheduler's weight and cap
 * (xc_sched_credit{,2}_domain_{get,set}, chosen by the scheduler of
 * the domain's cpupool, as libxl_domain_sched_params_set), the name
 * (xenstore's name and /vm/UUID/name in one transaction, as
 * libxl_domain_rename), the start time (/vm/UUID/start_time, which
 * xen_xs.c writes at boot, as libxl_vm_get_start_time reads it) and
 * the console ring (xc_readconsolering, as xl dmesg).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xen_priv.h"

/* The scheduler of the domain's cpupool (XEN_SCHEDULER_*). */
static int
pool_scheduler(struct xen_be *be, uint32_t domid, uint32_t *ret_sched)
{
	xc_domaininfo_t info;
	xc_cpupoolinfo_t *pool;
	int got;

	got = xc_domain_getinfolist(be->xch, domid, 1, &info);
	if (got < 0)
		return -xen_errno();
	if (got != 1 || info.domain != domid)
		return -ESRCH;
	/* The first pool from that id on: it must be that one. */
	pool = xc_cpupool_getinfo(be->xch, info.cpupool);
	if (pool == NULL)
		return -xen_errno();
	if (pool->cpupool_id != info.cpupool) {
		xc_cpupool_infofree(be->xch, pool);
		return -ESRCH;
	}
	*ret_sched = pool->sched_id;
	xc_cpupool_infofree(be->xch, pool);
	return 0;
}

/*
 * credit and credit2 take the same two parameters in structures of the
 * same shape; Xen leaves a weight of 0 unchanged, so both are written
 * after reading them, as libxl does.
 */
static int
sched_rw(struct xen_be *be, uint32_t sched, uint32_t domid, bool set,
    uint16_t *weight, uint16_t *cap)
{
	struct xen_domctl_sched_credit c1 = { *weight, *cap };
	struct xen_domctl_sched_credit2 c2 = { *weight, *cap };
	int rc;

	if (sched == XEN_SCHEDULER_CREDIT)
		rc = set ? xc_sched_credit_domain_set(be->xch, domid, &c1) :
		    xc_sched_credit_domain_get(be->xch, domid, &c1);
	else
		rc = set ? xc_sched_credit2_domain_set(be->xch, domid, &c2) :
		    xc_sched_credit2_domain_get(be->xch, domid, &c2);
	if (rc < 0)
		return -xen_errno();
	*weight = sched == XEN_SCHEDULER_CREDIT ? c1.weight : c2.weight;
	*cap = sched == XEN_SCHEDULER_CREDIT ? c1.cap : c2.cap;
	return 0;
}

int
xen_sched(void *priv, uint32_t domid, uint32_t weight, uint32_t cap,
    struct vmb_sched *ret)
{
	struct xen_be *be = priv;
	uint16_t w = 0, c = 0;
	uint32_t sched;
	int rc;

	if (domid >= DOMID_FIRST_RESERVED)
		return -EINVAL;
	if ((weight != VMB_SCHED_KEEP && weight > VMB_SCHED_WEIGHT_MAX) ||
	    (cap != VMB_SCHED_KEEP && cap > UINT16_MAX))
		return -EINVAL;
	rc = pool_scheduler(be, domid, &sched);
	if (rc == 0 && sched != XEN_SCHEDULER_CREDIT &&
	    sched != XEN_SCHEDULER_CREDIT2)
		rc = -ENOTSUP;	/* rtds, null, arinc653: other parameters */
	if (rc == 0)
		rc = sched_rw(be, sched, domid, false, &w, &c);
	if (rc == 0 && (weight != VMB_SCHED_KEEP || cap != VMB_SCHED_KEEP)) {
		if (weight != VMB_SCHED_KEEP)
			w = (uint16_t)weight;
		if (cap != VMB_SCHED_KEEP)
			c = (uint16_t)cap;
		rc = sched_rw(be, sched, domid, true, &w, &c);
		if (rc == 0)
			rc = sched_rw(be, sched, domid, false, &w, &c);
	}
	if (rc)
		return rc;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->scheduler, sizeof(ret->scheduler), "%s",
	    sched == XEN_SCHEDULER_CREDIT ? "credit" : "credit2");
	ret->weight = w;
	ret->cap = c;
	return 0;
}

/* /local/domain/N/vm, the domain's /vm/UUID; -ENOENT when absent. */
static int
vm_path(struct xen_be *be, uint32_t domid, char *buf, size_t len)
{
	char path[XS_PATH_MAX], *v;
	unsigned n;
	int rc = 0;

	snprintf(path, sizeof(path), "/local/domain/%u/vm", domid);
	pthread_mutex_lock(&be->xs_lock);
	v = xs_read(be->xsh, XBT_NULL, path, &n);
	pthread_mutex_unlock(&be->xs_lock);
	if (v == NULL)
		return errno == ENOENT || errno == 0 ? -ENOENT : -xen_errno();
	if (strncmp(v, "/vm/", 4) != 0 || v[4] == '\0' ||
	    snprintf(buf, len, "%s", v) >= (int)len)
		rc = -EPROTO;
	free(v);
	return rc;
}

struct rename_arg {
	char	dom[XS_PATH_MAX];
	char	vm[XS_PATH_MAX];
	const char *name;
};

static void
fill_rename(struct xs_tx *tx, const void *varg)
{
	const struct rename_arg *a = varg;

	xen_xs_tx_write(tx, a->dom, "name", a->name, NULL, 0);
	if (a->vm[0] != '\0')
		xen_xs_tx_write(tx, a->vm, "name", a->name, NULL, 0);
}

int
xen_rename(void *priv, uint32_t domid, const char *name)
{
	struct xen_be *be = priv;
	struct rename_arg a = { .name = name };
	int rc;

	if (domid == 0 || domid >= DOMID_FIRST_RESERVED)
		return -EINVAL;
	rc = vm_path(be, domid, a.vm, sizeof(a.vm));
	if (rc == -ENOENT)
		a.vm[0] = '\0';	/* a domain without /vm: only its name */
	else if (rc)
		return rc;
	snprintf(a.dom, sizeof(a.dom), "/local/domain/%u", domid);
	return xen_xs_transaction(be, domid, fill_rename, &a);
}

int
xen_start_time(void *priv, uint32_t domid, double *ret_time)
{
	struct xen_be *be = priv;
	char vm[XS_PATH_MAX], path[XS_PATH_MAX + 16], *v, *end;
	unsigned n;
	int rc;

	rc = vm_path(be, domid, vm, sizeof(vm));
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/start_time", vm);
	pthread_mutex_lock(&be->xs_lock);
	v = xs_read(be->xsh, XBT_NULL, path, &n);
	pthread_mutex_unlock(&be->xs_lock);
	if (v == NULL)
		return -ENOENT;
	*ret_time = strtod(v, &end);
	rc = end == v || *end != '\0' || *ret_time <= 0 ? -EPROTO : 0;
	free(v);
	return rc;
}

/* Past this, Xen's ring (conring_size) would be a megabyte: stop there. */
#define XEN_DMESG_MAX	(1u << 20)
#define XEN_DMESG_CHUNK	16384u

/*
 * The ring read in pieces, each from where the last ended, as xl dmesg
 * does (libxl_xen_console_read_line); cleared, if asked, after.
 */
int
xen_dmesg(void *priv, bool clear, char **ret_text, size_t *ret_len)
{
	struct xen_be *be = priv;
	char *buf = NULL, *nb;
	size_t len = 0;
	uint32_t index = 0;
	unsigned int n;
	int rc = 0;

	do {
		if (!(nb = realloc(buf, len + XEN_DMESG_CHUNK + 1))) {
			rc = -ENOMEM;
			break;
		}
		buf = nb;
		n = XEN_DMESG_CHUNK;
		if (xc_readconsolering(be->xch, buf + len, &n, 0, 1,
		    &index) < 0) {
			rc = -xen_errno();
			break;
		}
		len += n > XEN_DMESG_CHUNK ? XEN_DMESG_CHUNK : n;
	} while (n > 0 && len < XEN_DMESG_MAX);
	if (rc == 0 && clear) {
		n = 0;
		if (xc_readconsolering(be->xch, buf + len, &n, 1, 0, NULL) < 0)
			rc = -xen_errno();
	}
	if (rc) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*ret_text = buf;
	*ret_len = len;
	return 0;
}
