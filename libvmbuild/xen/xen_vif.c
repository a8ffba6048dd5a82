/*
 * xen_vif.c - what Xen's vif-bridge hotplug script (vif-bridge online,
 * 4.17 as Debian ships it) does for a vif whose config names no
 * script, done in the daemon without its forks (4.9 s of a Linux
 * guest's create under emulation in the lab):
 *
 *   1. netback's interface vifD.N down, its MAC fe:ff:ff:ff:ff:ff (the
 *      numerically largest, so that the bridge never takes it as its
 *      own for STP: xen-network-common.sh's _setup_bridge_port);
 *   2. its MTU: the backend's mtu key if set (vmbuild writes one only
 *      when it is not 1500, as libxl), else the bridge's; written to
 *      the frontend's mtu too (set_mtu);
 *   3. into the bridge, then up (add_to_bridge);
 *   4. hotplug-status "connected", which netback waits for.
 *
 * Only the plain case is done here; the script runs instead (the
 * caller's -EAGAIN) when the vif has a vifname (the script renames the
 * interface), an ip= (the script's iptables rules, disabled in Debian's
 * package but not upstream's), a bridge that is not one (the script's
 * xenbrN -> ethN fallback and its error), or when /etc/xen/scripts has
 * vif-post.d hooks (the script sources them): nothing an operator set up
 * for the script is skipped.  The removal is the script's (offline), as
 * for xl; netback's interface leaves the bridge when it goes anyway.
 */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "vmb_internal.h"
#include "xen_priv.h"

#define SCRIPT_DIR		"/etc/xen/scripts"
#define SCRIPT_DIR_ENV		"VMBUILD_XEN_SCRIPT_DIR"	/* tests */
#define SYSFS_NET_ENV		"VMBUILD_SYSFS_NET"		/* tests */

/* Does the script directory have an executable vif-post.d hook? */
static bool
have_hooks(void)
{
	const char *sd = getenv(SCRIPT_DIR_ENV) ? getenv(SCRIPT_DIR_ENV) :
	    SCRIPT_DIR;
	char path[512];
	struct dirent *e;
	bool any = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/vif-post.d", sd);
	if ((d = opendir(path)) == NULL)
		return false;
	while (!any && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		char f[1024];

		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		any = n > 5 && !strcmp(e->d_name + n - 5, ".hook") &&
		    access(f, X_OK) == 0;
	}
	closedir(d);
	return any;
}

/* Is `name` a bridge (sysfs has its bridge/ directory)? */
static bool
is_bridge(const char *name)
{
	const char *sys = getenv(SYSFS_NET_ENV) ? getenv(SYSFS_NET_ENV) :
	    "/sys/class/net";
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s/bridge", sys, name);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
ifreq_ioctl(int s, unsigned long req, struct ifreq *ifr, const char *name)
{
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", name);
	return ioctl(s, req, ifr) == 0 ? 0 : -errno;
}

struct online_keys {
	const char *be, *fe;
	char	mtu[16];		/* "": the frontend's is left */
};

static void
fill_online(struct xs_tx *tx, const void *arg)
{
	const struct online_keys *k = arg;

	if (k->mtu[0])
		xen_xs_tx_write(tx, k->fe, "mtu", k->mtu, NULL, 0);
	xen_xs_tx_write(tx, k->be, "hotplug-status", "connected", NULL, 0);
}

int
xen_vif_online(struct xen_be *be, uint32_t domid, const char *bepath,
    const char *fepath, const struct vmb_nic *nic, const char *vif,
    const char *name, char *why, size_t why_len)
{
	struct online_keys keys = { .be = bepath, .fe = fepath };
	const char *step = "";
	struct ifreq ifr;
	unsigned mtu;
	int s, rc, idx;

	if (nic->vifname[0] || nic->ip || !nic->bridge[0] ||
	    !is_bridge(nic->bridge) || have_hooks())
		return -EAGAIN;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		rc = -errno;
		vmb__why(why, why_len, "%s: cannot open a socket: %s", name,
		    strerror(-rc));
		return rc;
	}
	memset(&ifr, 0, sizeof(ifr));
	step = "read its flags";
	if ((rc = ifreq_ioctl(s, SIOCGIFFLAGS, &ifr, vif)) != 0)
		goto fail;
	ifr.ifr_flags &= ~IFF_UP;
	step = "take it down";
	if ((rc = ifreq_ioctl(s, SIOCSIFFLAGS, &ifr, vif)) != 0)
		goto fail;
	/* The script's "|| true": a MAC the driver refuses is no failure. */
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, "\xfe\xff\xff\xff\xff\xff", 6);
	(void)ifreq_ioctl(s, SIOCSIFHWADDR, &ifr, vif);
	/* The backend's mtu key: written by vmbuild when not 1500. */
	mtu = nic->mtu != 1500 ? nic->mtu : 0;
	if (mtu == 0) {
		memset(&ifr, 0, sizeof(ifr));
		step = "read the bridge's MTU";
		if ((rc = ifreq_ioctl(s, SIOCGIFMTU, &ifr, nic->bridge)) != 0)
			goto fail;
		mtu = (unsigned)ifr.ifr_mtu;
		snprintf(keys.mtu, sizeof(keys.mtu), "%u", mtu);
	}
	if (mtu > 0) {
		memset(&ifr, 0, sizeof(ifr));
		ifr.ifr_mtu = (int)mtu;
		/* The script's "|| :": the vif keeps its own. */
		(void)ifreq_ioctl(s, SIOCSIFMTU, &ifr, vif);
		snprintf(keys.mtu, sizeof(keys.mtu), "%u", mtu);
	}
	idx = (int)if_nametoindex(vif);
	if (idx == 0) {
		rc = -errno;
		step = "find it";
		goto fail;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = idx;
	step = "add it to the bridge";
	rc = ifreq_ioctl(s, SIOCBRADDIF, &ifr, nic->bridge);
	if (rc != 0 && rc != -EBUSY)	/* EBUSY: in it already */
		goto fail;
	memset(&ifr, 0, sizeof(ifr));
	step = "read its flags";
	if ((rc = ifreq_ioctl(s, SIOCGIFFLAGS, &ifr, vif)) != 0)
		goto fail;
	ifr.ifr_flags |= IFF_UP;
	step = "bring it up";
	if ((rc = ifreq_ioctl(s, SIOCSIFFLAGS, &ifr, vif)) != 0)
		goto fail;
	close(s);
	rc = xen_xs_transaction(be, domid, fill_online, &keys);
	if (rc)
		vmb__why(why, why_len, "%s: cannot write hotplug-status: %s",
		    name, strerror(-rc));
	return rc;
fail:
	vmb__why(why, why_len, "%s: cannot %s (%s, bridge %s): %s", name, step,
	    vif, nic->bridge, strerror(-rc));
	close(s);
	return rc;
}
