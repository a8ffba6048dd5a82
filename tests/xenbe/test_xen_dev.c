/*
 * test_xen_dev.c - PV disks and vifs on the xen backend (xen_dev.c,
 * xen_hotplug.c) without a Xen: the in-memory xenstore of fake_xs.c,
 * whose fake backend drivers move through the XenbusStates as blkback
 * and netback do (or do not, when a test says so), and hotplug scripts
 * that are real programs, run from a directory of the test's
 * (VMBUILD_XEN_SCRIPT_DIR), logging how they were called.
 *
 *   - the entries of a disk and a vif are the ones `xl create` wrote in
 *     the lab for the same devices (xl-devices.layout, recorded from a
 *     real run: `make check-xen` prints them as XSDEV lines), but for
 *     what the kernel and the hotplug scripts write there;
 *   - the scripts run as libxl runs them: arguments, environment;
 *   - a failing script, a backend that never reaches InitWait, a guest
 *     that never connects: an error naming the device, and nothing
 *     left (entries, or a loop device: the remove script ran);
 *   - detach, forced when the backend does not close, and the
 *     teardown of every device at destroy.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/sockios.h>
#include <net/if.h>

#include <cmocka.h>

#include "fake_xs.h"
#include "xen_priv.h"

#define DOMID		5
#define LAYOUT		"tests/xenbe/xl-devices.layout"

static struct xen_be be;
static char dir[64], logpath[96];

static void
write_script(const char *name, const char *body)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n"
	    "echo \"$(basename $0) $* XENBUS_PATH=$XENBUS_PATH "
	    "XENBUS_TYPE=$XENBUS_TYPE XENBUS_BASE_PATH=$XENBUS_BASE_PATH "
	    "script=$script vif=$vif netdev=$netdev env=$(env | grep -cv "
	    "'^\\(PWD\\|SHLVL\\|_\\)=')\" >> %s\n%s\n", logpath, body);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

static const struct xs_permissions ro_perms[] = {
	{ 0, XS_PERM_NONE }, { DOMID, XS_PERM_READ } };

static int
setup(void **state)
{
	(void)state;
	fake_xs_reset();
	memset(&be, 0, sizeof(be));
	be.xsh = (struct xs_handle *)&fake_xs;	/* never dereferenced */
	pthread_mutex_init(&be.xs_lock, NULL);
	snprintf(dir, sizeof(dir), "/tmp/vmb-xendev-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	setenv("VMBUILD_XEN_SCRIPT_DIR", dir, 1);
	write_script("block", "exit 0");
	write_script("vif-bridge", "exit 0");
	write_script("block-broken", "echo 'losetup: no free loop device' >&2; "
	    "exit 1");
	write_script("block-slow", "exec sleep 30");
	/* What libxl__domain_make leaves for the devices. */
	fake_xs_set("/local/domain/5/device", "");
	fake_xs_set("/libxl/5/device", "");
	fake_xs_set("/local/domain/5/vm", "/vm/0");
	/* libxl__domain_make's roperm: dom0 owns it, the guest reads. */
	fake_xs_set_perms("/local/domain/5", ro_perms, 2);
	fake_xs_set_perms("/local/domain/5/device", ro_perms, 2);
	return 0;
}

static int
teardown_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* The scripts' log, "" when none ran. */
static const char *
script_log(void)
{
	static char buf[4096];
	FILE *f = fopen(logpath, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

static struct vmb_disk disk = { .target = (char *)"/guest/disk.img",
	.vdev = "xvda", .devid = 51712, .discard = true, .trusted = true };
static struct vmb_nic nic = { .devid = 0, .trusted = true,
	.bridge = "xenbr0" };

static struct vmb_dev
dev_of(const struct vmb_disk *d, const struct vmb_nic *n)
{
	/* The scripts of the test's directory, unless a test says. */
	struct vmb_dev v = { .initwait_ms = 2000, .hotplug_ms = 10000,
	    .close_ms = 2000, .hotplug_scripts = true };

	v.kind = d ? VMB_DEVICE_DISK : VMB_DEVICE_NIC;
	v.devid = d ? d->devid : n->devid;
	v.disk = d;
	v.nic = n;
	if (n)
		memcpy(v.mac, (uint8_t[]){ 0x00, 0x16, 0x3e, 0x4c, 0x1b, 0x7f },
		    6);
	return v;
}

/* Nothing of the device left: backend, frontend, libxl's record. */
static void
nothing_left(const char *kind, uint32_t devid)
{
	char p[128];

	snprintf(p, sizeof(p), "/local/domain/0/backend/%s/%u", kind, DOMID);
	assert_int_equal(fake_xs_count(p), 0);
	snprintf(p, sizeof(p), "/local/domain/%u/device/%s/%u", DOMID, kind,
	    devid);
	assert_int_equal(fake_xs_count(p), 0);
	snprintf(p, sizeof(p), "/libxl/%u/device/%s/%u", DOMID, kind, devid);
	assert_int_equal(fake_xs_count(p), 0);
}

/*
 * Keys the kernel (blkback, netback, the guest's frontends) and the
 * hotplug scripts write, not the toolstack: in the lab's record, not in
 * what the toolstack writes.
 */
static bool
written_by_others(const char *path)
{
	static const char *const others[] = {
		"feature-", "sectors", "info", "sector-size",
		"physical-sector-size", "hotplug-status", "physical-device",
		"physical-device-path", "node", "max-ring-page-order",
		"multi-queue-", "ring-ref", "event-channel", "protocol",
		"ring-page-order", "tx-ring-ref", "rx-ring-ref",
		"request-rx-copy", "queue-", "discard-granularity",
		"discard-alignment", "discard-secure", "ctrl-ring-ref",
		"request-multicast-control", "persistent", "backend-features",
		"xdp-headroom",
	};
	const char *key = strrchr(path, '/') + 1;

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		if (!strncmp(key, others[i], strlen(others[i])))
			return true;
	/* Whatever lies under a queue of a multi-queue device. */
	return strstr(path, "/queue-") != NULL;
}

/*
 * "path" in the fake store with the lab's domid N for DOMID, and the
 * value, as the layout file writes them: PATH = "VALUE".
 */
static void
normalise(const char *path, char *out, size_t len)
{
	char tmp[300];
	const char *p = path;
	size_t o = 0;

	while (*p && o + 1 < sizeof(tmp)) {
		if (!strncmp(p, "/5/", 3) || !strcmp(p, "/5")) {
			o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "/N");
			p += 2;
		} else {
			tmp[o++] = *p++;
		}
	}
	tmp[o] = '\0';
	snprintf(out, len, "%s", tmp);
}

/*
 * Compare what the backend wrote under `prefix` (kind/devid) with the
 * lab's xl record: the same keys, the same values, but for the keys
 * others write, the states (the lab's guest was running), and MACs.
 */
static void
same_as_xl(const char *kind, uint32_t devid)
{
	char line[700], prefixes[3][128];
	FILE *f = fopen(LAYOUT, "r");
	unsigned nwant = 0, matched = 0, ours = 0;

	assert_non_null(f);
	snprintf(prefixes[0], sizeof(prefixes[0]),
	    "/local/domain/0/backend/%s/N/%u/", kind, devid);
	snprintf(prefixes[1], sizeof(prefixes[1]),
	    "/local/domain/N/device/%s/%u/", kind, devid);
	snprintf(prefixes[2], sizeof(prefixes[2]), "/libxl/N/device/%s/%u/",
	    kind, devid);
	while (fgets(line, sizeof(line), f)) {
		char *eq, path[700], *value, *end;
		bool found = false;

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "XSDEV tool=xl ", 14) != 0)
			continue;
		memmove(line, line + 14, strlen(line + 14) + 1);
		eq = strstr(line, " = \"");
		if (!eq)
			continue;
		*eq = '\0';
		value = eq + 4;
		end = strrchr(value, '"');
		if (end)
			*end = '\0';
		snprintf(path, sizeof(path), "%s", line);
		if (strncmp(path, prefixes[0], strlen(prefixes[0])) &&
		    strncmp(path, prefixes[1], strlen(prefixes[1])) &&
		    strncmp(path, prefixes[2], strlen(prefixes[2])))
			continue;
		if (written_by_others(path))
			continue;
		nwant++;
		for (unsigned i = 0; i < fake_xs.nr; i++) {
			char np[700];

			normalise(fake_xs.n[i].path, np, sizeof(np));
			if (strcmp(np, path) != 0)
				continue;
			found = true;
			/* States move; MACs are the device's own. */
			if (strstr(path, "/state") || strstr(path, "/mac"))
				break;
			/* The domain's id: N in the recording. */
			if (!strcmp(value, "N")) {
				assert_string_equal(fake_xs.n[i].value, "5");
				break;
			}
			normalise(fake_xs.n[i].value, np, sizeof(np));
			/* Our scripts run from the test's directory. */
			if (!strncmp(np, dir, strlen(dir)) &&
			    np[strlen(dir)] == '/') {
				char sp[300];

				snprintf(sp, sizeof(sp), "/etc/xen/scripts%s",
				    np + strlen(dir));
				snprintf(np, sizeof(np), "%s", sp);
			}
			if (strcmp(np, value) != 0)
				print_error("%s: xl wrote \"%s\", vmbuild \"%s\"\n",
				    path, value, fake_xs.n[i].value);
			assert_string_equal(np, value);
			break;
		}
		if (!found)
			print_error("xl wrote %s, vmbuild did not\n", path);
		assert_true(found);
		matched++;
	}
	fclose(f);
	assert_true(nwant >= 8);
	/* And nothing of ours that xl did not write. */
	for (unsigned i = 0; i < fake_xs.nr; i++) {
		char np[300], l[400];
		bool in_xl = false;

		normalise(fake_xs.n[i].path, np, sizeof(np));
		if (strncmp(np, prefixes[0], strlen(prefixes[0])) &&
		    strncmp(np, prefixes[1], strlen(prefixes[1])) &&
		    strncmp(np, prefixes[2], strlen(prefixes[2])))
			continue;
		if (written_by_others(np))
			continue;
		ours++;
		f = fopen(LAYOUT, "r");
		assert_non_null(f);
		snprintf(l, sizeof(l), "XSDEV tool=xl %s = ", np);
		while (!in_xl && fgets(line, sizeof(line), f))
			in_xl = !strncmp(line, l, strlen(l));
		fclose(f);
		if (!in_xl)
			print_error("vmbuild wrote %s, xl did not\n", np);
		assert_true(in_xl);
	}
	assert_int_equal(ours, matched);
}

static void
test_disk_as_xl(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	char why[256] = "";

	(void)state;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	same_as_xl("vbd", 51712);
	/* Permissions as libxl: dom0 owns the backend, the guest its end. */
	assert_int_equal(fake_xs_lookup("/local/domain/0/backend/vbd/5/51712")
	    ->perms[0].id, 0);
	assert_int_equal(fake_xs_lookup("/local/domain/0/backend/vbd/5/51712")
	    ->perms[1].id, 5);
	assert_int_equal(fake_xs_lookup("/local/domain/5/device/vbd/51712")
	    ->perms[0].id, 5);
	/* The script as libxl runs it, in an environment of its own. */
	assert_non_null(strstr(script_log(), "block add XENBUS_PATH="
	    "backend/vbd/5/51712 XENBUS_TYPE=vbd XENBUS_BASE_PATH=backend "
	    "script="));
	assert_non_null(strstr(script_log(), "/block vif= netdev= env=5"));
	/* Twice the same vbd: refused, the first one untouched. */
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -EEXIST);
	assert_non_null(strstr(why, "disk xvda (vbd 51712)"));
	assert_string_equal(fake_xs_val("/local/domain/0/backend/vbd/5/51712/"
	    "params"), "/guest/disk.img");
}

static void
test_vif_as_xl(void **state)
{
	struct vmb_dev v = dev_of(NULL, &nic);
	char why[256] = "";

	(void)state;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	same_as_xl("vif", 0);
	assert_string_equal(fake_xs_val("/local/domain/5/device/vif/0/mac"),
	    "00:16:3e:4c:1b:7f");
	assert_non_null(strstr(script_log(), "vif-bridge online type_if=vif "
	    "XENBUS_PATH=backend/vif/5/0 XENBUS_TYPE=vif "
	    "XENBUS_BASE_PATH=backend script="));
	assert_non_null(strstr(script_log(), "/vif-bridge vif=vif5.0 netdev= "
	    "env=7"));
}

/*
 * vif-bridge online runs once netback's vifD.N resolves by name, as the
 * script's `ip link set dev vifD.N` needs: Linux shows the device in
 * /sys/class/net before it lists it by name (register_netdevice), and
 * busybox's ip, run in between, failed vif-bridge in the lab.  In a
 * child with a network namespace of its own whose loopback is renamed
 * vif5.0: there the name resolves, while /sys (the host's) has no
 * vif5.0.  Waiting on sysfs would take all of initwait_ms (10 min; the
 * alarm ends the child first); waiting on the name, no time at all.
 */
static void
test_vif_waits_for_name(void **state)
{
	struct vmb_dev v = dev_of(NULL, &nic);
	int status = 0;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ifreq ifr = { .ifr_name = "lo" };
		char why[256] = "";
		int fd;

		if (unshare(CLONE_NEWNET) != 0 &&
		    unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
			_exit(77);
		snprintf(ifr.ifr_newname, sizeof(ifr.ifr_newname), "vif5.0");
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || ioctl(fd, SIOCSIFNAME, &ifr) != 0)
			_exit(77);
		close(fd);
		if (access("/sys/class/net/vif5.0", F_OK) == 0)
			_exit(77);	/* not the case this test is about */
		v.initwait_ms = 600000;
		alarm(120);
		if (xen_device_add(&be, DOMID, &v, why, sizeof(why)) != 0)
			_exit(12);
		if (!strstr(script_log(), "vif-bridge online type_if=vif"))
			_exit(13);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		skip();		/* no network namespace to be had */
	if (WIFSIGNALED(status))
		print_error("killed by signal %d: still waiting for vif5.0 "
		    "after 120 s\n", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * The builtin vif-bridge (xen_vif.c), in a child with a network
 * namespace of its own: a bridge xenbr0 and an interface as
 * netback's vif5.0 (iproute2's `ip link add`, a veth or a dummy); the bridge is found
 * through a sysfs of the test's (VMBUILD_SYSFS_NET: the host's /sys
 * shows the host's namespace).  Skips where no namespace, bridge or
 * dummy interface can be had.  Then a vif-post.d hook makes the script
 * run instead: what an operator set up for it is not skipped.
 */
static int
vif_builtin_child(bool hook)
{
	struct vmb_dev v = dev_of(NULL, &nic);
	char why[256] = "", path[256], out[512] = "";
	struct ifreq ifr;
	FILE *p;
	int fd;

	if (unshare(CLONE_NEWNET) != 0)
		return 77;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCBRADDBR, "xenbr0") != 0)
		return 77;
	if (system("ip link add vif5.0 type veth peer name vif5p 2>/dev/null"
	    " || ip link add vif5.0 type dummy 2>/dev/null") != 0)
		return 77;
	snprintf(path, sizeof(path), "%s/sysnet/xenbr0/bridge", dir);
	snprintf(out, sizeof(out), "mkdir -p %s", path);
	if (system(out) != 0)
		return 20;
	snprintf(path, sizeof(path), "%s/sysnet", dir);
	setenv("VMBUILD_SYSFS_NET", path, 1);
	if (hook) {
		snprintf(out, sizeof(out), "mkdir -p %s/vif-post.d && "
		    "printf ':\\n' > %s/vif-post.d/00-local.hook && "
		    "chmod +x %s/vif-post.d/00-local.hook", dir, dir, dir);
		if (system(out) != 0)
			return 21;
	}
	v.hotplug_scripts = false;
	alarm(60);
	if (xen_device_add(&be, DOMID, &v, why, sizeof(why)) != 0) {
		fprintf(stderr, "# %s\n", why);
		return 12;
	}
	if (hook)
		return strstr(script_log(), "vif-bridge online") ? 0 : 13;
	if (strstr(script_log(), "vif-bridge online"))
		return 14;	/* the script ran */
	if (!fake_xs_val("/local/domain/0/backend/vif/5/0/hotplug-status") ||
	    strcmp(fake_xs_val("/local/domain/0/backend/vif/5/0/"
	    "hotplug-status"), "connected"))
		return 15;
	if (!fake_xs_val("/local/domain/5/device/vif/0/mtu") ||
	    strcmp(fake_xs_val("/local/domain/5/device/vif/0/mtu"), "1500"))
		return 16;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "vif5.0");
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0 ||
	    memcmp(ifr.ifr_hwaddr.sa_data, "\xfe\xff\xff\xff\xff\xff", 6))
		return 17;
	p = popen("ip -o link show vif5.0", "r");
	if (!p || !fgets(out, sizeof(out), p))
		return 18;
	pclose(p);
	if (!strstr(out, "master xenbr0") || !strstr(out, ",UP"))
		return 19;
	return 0;
}

static void
test_vif_builtin(void **state)
{
	int status = 0;
	pid_t pid;

	(void)state;
	for (int hook = 0; hook < 2; hook++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(vif_builtin_child(hook));
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			skip();	/* no namespace, bridge or dummy here */
		print_message("# hook %d: exit %d\n", hook,
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

/* A script that fails: why names the device, the script, its words. */
static void
test_script_fails(void **state)
{
	struct vmb_disk d = disk;
	struct vmb_dev v;
	char why[512] = "";

	(void)state;
	d.vdev[3] = 'b';
	d.devid = 51728;
	d.script = (char *)"block-broken";
	v = dev_of(&d, NULL);
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -EIO);
	assert_non_null(strstr(why, "disk xvdb (vbd 51728): hotplug script "));
	assert_non_null(strstr(why, "/block-broken add exited with status 1: "
	    "losetup: no free loop device"));
	/* Taken back: the remove ran (a loop device goes), no entry left. */
	assert_non_null(strstr(script_log(), "block-broken add "));
	assert_non_null(strstr(script_log(), "block-broken remove "));
	nothing_left("vbd", 51728);
}

/*
 * A script's name never leaves the script directory, whoever checked
 * it before: "../DIR/block" (which would be the directory's own block)
 * and ".." are refused before anything is written or run.
 */
static void
test_script_name_only(void **state)
{
	const char *names[] = { NULL, "..", "block/" };
	char up[96];
	struct vmb_disk d = disk;
	struct vmb_nic n = nic;
	struct vmb_dev v;
	char why[512];

	(void)state;
	snprintf(up, sizeof(up), "../%s/block", strrchr(dir, '/') + 1);
	names[0] = up;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		d.script = (char *)names[i];
		v = dev_of(&d, NULL);
		why[0] = '\0';
		assert_int_equal(xen_device_add(&be, DOMID, &v, why,
		    sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "neither a name in the script "
		    "directory nor an absolute path"));
		nothing_left("vbd", 51712);
	}
	n.script = up;
	v = dev_of(NULL, &n);
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -EINVAL);
	nothing_left("vif", 0);
	assert_string_equal(script_log(), "");
}

/* A script that hangs is killed after its time. */
static void
test_script_hangs(void **state)
{
	struct vmb_disk d = disk;
	struct vmb_dev v;
	char why[512] = "";

	(void)state;
	d.script = (char *)"block-slow";
	v = dev_of(&d, NULL);
	v.hotplug_ms = 300;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -ETIMEDOUT);
	assert_non_null(strstr(why, "/block-slow add did not finish in 0.3 "
	    "s; killed"));
	nothing_left("vbd", 51712);
}

/* No blkback in dom0: the backend never reaches InitWait. */
static void
test_backend_never_comes(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	char why[512] = "";

	(void)state;
	fake_xs.backend = FAKE_BE_DEAD;
	v.initwait_ms = 300;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -ETIMEDOUT);
	assert_non_null(strstr(why, "disk xvda (vbd 51712): the backend did "
	    "not reach InitWait in 0.3 s (state 1): is xen-blkback loaded"));
	assert_string_equal(script_log(), "");	/* no script ran */
	nothing_left("vbd", 51712);
}

/*
 * Without CAP_SYS_ADMIN (vmbuildd.service's default sandbox), a disk of
 * the block script is refused up front, naming the capability, and
 * nothing is written.  In a child, which drops the capability.
 */
static void
test_no_capability(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	int status = 0;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = {
			.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
		struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
		char why[512] = "";
		int rc;

		if (syscall(SYS_capget, &h, d) != 0)
			_exit(10);
		d[CAP_SYS_ADMIN / 32].effective &=
		    ~(1u << (CAP_SYS_ADMIN % 32));
		if (syscall(SYS_capset, &h, d) != 0)
			_exit(11);
		rc = xen_device_add(&be, DOMID, &v, why, sizeof(why));
		if (rc != -EPERM)
			_exit(12);
		if (!strstr(why, "disk xvda (vbd 51712): the block hotplug "
		    "script needs CAP_SYS_ADMIN"))
			_exit(13);
		if (fake_xs_count("/local/domain/0/backend") != 0 ||
		    strcmp(script_log(), "") != 0)
			_exit(14);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Hot-plug into a guest that never connects its frontend. */
static void
test_guest_never_connects(void **state)
{
	struct vmb_dev v = dev_of(NULL, &nic);
	char why[512] = "";

	(void)state;
	v.connect_ms = 300;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -ETIMEDOUT);
	assert_non_null(strstr(why, "vif 0 (vif5.0): not connected in time "
	    "(backend state 2, frontend state 1): does the guest run its PV "
	    "drivers?"));
	assert_non_null(strstr(script_log(), "vif-bridge online "));
	assert_non_null(strstr(script_log(), "vif-bridge offline "));
	nothing_left("vif", 0);
}

/* Hot-plug into a guest that connects; then detach, asked. */
static void
test_attach_detach(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	char why[512] = "";

	(void)state;
	fake_xs.backend = FAKE_BE_CONNECT;
	v.connect_ms = 2000;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	assert_string_equal(fake_xs_val("/local/domain/5/device/vbd/51712/"
	    "state"), "4");
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    false, 2000, why, sizeof(why)), 0);
	assert_non_null(strstr(script_log(), "block remove "));
	nothing_left("vbd", 51712);
	/* The directories it left empty went too, the domain's did not. */
	assert_null(fake_xs_lookup("/local/domain/0/backend/vbd"));
	assert_non_null(fake_xs_lookup("/local/domain/5/device"));
	assert_non_null(fake_xs_lookup("/libxl/5/device"));
	/* Once more: there is none. */
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    false, 2000, why, sizeof(why)), -ENOENT);
}

/*
 * The builtin block attach (xen_blk.c), on real loop devices: the test
 * runs as root with /dev/loop-control, else it skips.  A file of the
 * test's directory as the disk.
 */
static char blkfile[128];

static bool
have_loops(void)
{
	int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static struct vmb_disk
blk_disk(mode_t mode, bool readonly)
{
	struct vmb_disk d = disk;
	char lockdir[96];
	int fd;

	snprintf(blkfile, sizeof(blkfile), "%s/disk.img", dir);
	fd = open(blkfile, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	snprintf(lockdir, sizeof(lockdir), "%s/locks", dir);
	setenv("VMBUILD_XEN_LOCK_DIR", lockdir, 1);
	d.target = blkfile;
	d.readonly = readonly;
	return d;
}

/* Is /dev/loopN (node) bound, and to our file? */
static bool
loop_bound(const char *node)
{
	char sys[128], back[256] = "";
	FILE *f;

	snprintf(sys, sizeof(sys), "/sys/block/%s/loop/backing_file",
	    node + 5);
	f = fopen(sys, "r");
	if (!f)
		return false;
	if (!fgets(back, sizeof(back), f))
		back[0] = '\0';
	fclose(f);
	back[strcspn(back, "\n")] = '\0';
	return strcmp(back, blkfile) == 0;
}

static void
test_builtin_block(void **state)
{
	struct vmb_disk d;
	struct vmb_dev v;
	char why[512] = "", node[64], lock[128], *pd;
	struct stat st;

	(void)state;
	if (!have_loops())
		skip();
	d = blk_disk(0600, false);
	v = dev_of(&d, NULL);
	v.hotplug_scripts = false;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	/* No script ran for the add; the keys the script would write are. */
	assert_null(strstr(script_log(), "block add"));
	snprintf(node, sizeof(node), "%s",
	    fake_xs_val("/local/domain/0/backend/vbd/5/51712/node"));
	assert_int_equal(strncmp(node, "/dev/loop", 9), 0);
	assert_true(loop_bound(node));
	assert_string_equal(fake_xs_val("/local/domain/0/backend/vbd/5/51712/"
	    "physical-device-path"), node);
	assert_string_equal(fake_xs_val("/local/domain/0/backend/vbd/5/51712/"
	    "hotplug-status"), "connected");
	assert_int_equal(stat(node, &st), 0);
	pd = NULL;
	assert_true(asprintf(&pd, "%x:%x", major(st.st_rdev),
	    minor(st.st_rdev)) > 0);
	assert_string_equal(fake_xs_val("/local/domain/0/backend/vbd/5/51712/"
	    "physical-device"), pd);
	free(pd);
	/* The lock is let go as locking.sh's release_lock: the file goes. */
	snprintf(lock, sizeof(lock), "%s/locks/block", dir);
	assert_int_equal(access(lock, F_OK), -1);
	/* Removed as xl would: the remove script, then the loop goes. */
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    true, 500, why, sizeof(why)), 0);
	assert_non_null(strstr(script_log(), "block remove "));
	assert_false(loop_bound(node));
	nothing_left("vbd", 51712);
}

/* A file that cannot be written, asked for read-write: refused. */
static void
test_builtin_block_readonly_file(void **state)
{
	struct vmb_disk d;
	struct vmb_dev v;
	char why[512] = "";

	(void)state;
	if (!have_loops())
		skip();
	d = blk_disk(0444, false);
	v = dev_of(&d, NULL);
	v.hotplug_scripts = false;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -EROFS);
	print_message("# %s\n", why);
	assert_non_null(strstr(why, "disk xvda (vbd 51712)"));
	assert_non_null(strstr(why, "is read-only"));
	nothing_left("vbd", 51712);
	/* Read-only, it may be. */
	d.readonly = true;
	v = dev_of(&d, NULL);
	v.hotplug_scripts = false;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    true, 500, why, sizeof(why)), 0);
}

/*
 * The file already behind a loop device another VM's vbd writes: not
 * given to this one, neither read-write nor read-only (the script's
 * check_sharing).  Given to that same VM, it is.
 */
static void
test_builtin_block_shared(void **state)
{
	struct vmb_disk d;
	struct vmb_dev v;
	char why[512] = "", cmd[256], node[64] = "", mm[32];
	struct stat st;
	FILE *p;

	(void)state;
	if (!have_loops())
		skip();
	d = blk_disk(0600, false);
	snprintf(cmd, sizeof(cmd), "losetup -f --show %s 2>/dev/null", blkfile);
	p = popen(cmd, "r");
	if (!p || !fgets(node, sizeof(node), p) || node[0] != '/') {
		if (p)
			pclose(p);
		skip();
	}
	pclose(p);
	node[strcspn(node, "\n")] = '\0';
	assert_int_equal(stat(node, &st), 0);
	snprintf(mm, sizeof(mm), "%x:%x", major(st.st_rdev), minor(st.st_rdev));
	fake_xs_set("/local/domain/6/vm", "/vm/other");
	fake_xs_set("/local/domain/0/backend/vbd/6/51712/physical-device", mm);
	fake_xs_set("/local/domain/0/backend/vbd/6/51712/mode", "w");
	v = dev_of(&d, NULL);
	v.hotplug_scripts = false;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -EBUSY);
	print_message("# %s\n", why);
	assert_non_null(strstr(why, "is attached to domain 6"));
	nothing_left("vbd", 51712);
	d.readonly = true;
	v = dev_of(&d, NULL);
	v.hotplug_scripts = false;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -EBUSY);
	assert_non_null(strstr(why, "is attached read-write to domain 6"));
	/* The same VM (its vm path): allowed, as the script's same_vm. */
	fake_xs_set("/local/domain/6/vm", "/vm/0");
	d.readonly = false;
	v = dev_of(&d, NULL);
	v.hotplug_scripts = false;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    true, 500, why, sizeof(why)), 0);
	snprintf(cmd, sizeof(cmd), "losetup -d %s", node);
	assert_int_equal(system(cmd), 0);
}

/* A backend that does not close: forced, and the script still runs. */
static void
test_detach_stuck(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	char why[512] = "";

	(void)state;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	fake_xs.backend = FAKE_BE_STUCK;
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    false, 200, why, sizeof(why)), 0);
	assert_non_null(strstr(script_log(), "block remove "));
	nothing_left("vbd", 51712);
}

/* A destroyed domain's devices, every one. */
static void
test_destroy_takes_all(void **state)
{
	struct vmb_dev d = dev_of(&disk, NULL), n = dev_of(NULL, &nic);
	char why[512] = "";

	(void)state;
	assert_int_equal(xen_device_add(&be, DOMID, &d, why, sizeof(why)), 0);
	assert_int_equal(xen_device_add(&be, DOMID, &n, why, sizeof(why)), 0);
	xen_devices_destroy(&be, DOMID);
	assert_non_null(strstr(script_log(), "block remove "));
	assert_non_null(strstr(script_log(), "vif-bridge offline "));
	nothing_left("vbd", 51712);
	nothing_left("vif", 0);
	assert_int_equal(fake_xs_count("/local/domain/0/backend/"), 0);
}

/* libxl's permission sets: RO (owner, one reader), RW (the owner's only). */
#define RO(owner, reader)	2, { { owner, XS_PERM_NONE }, \
	{ reader, XS_PERM_READ } }
#define RW(owner)		1, { { owner, XS_PERM_NONE } }

/* The guest-controlled nodes the device code may read: the frontends' states. */
static void
tainted_only_states(void)
{
	for (unsigned i = 0; i < fake_xs.ntainted; i++) {
		const char *t = fake_xs.tainted[i];
		size_t l = strlen(t);
		bool ok = !strncmp(t, "/local/domain/5/device/", 23) &&
		    l > 6 && !strcmp(t + l - 6, "/state");

		if (!ok)
			print_error("read a node the guest controls: %s\n", t);
		assert_true(ok);
	}
}

/*
 * A disk and a vif, hot-plugged into a guest that connects: every node
 * of their three directories has libxl__device_generic_add's
 * permissions (frontend_perms, ro_frontend_perms for a vif's mtu,
 * backend_perms, /libxl's dom0-only), and nothing the guest controls
 * but the frontends' states is read, attach to destroy.
 */
static void
test_device_perms_as_libxl(void **state)
{
	static const char *const roots[] = {
	    "/local/domain/5/device/vbd", "/local/domain/5/device/vif",
	    "/local/domain/0/backend/vbd/5", "/local/domain/0/backend/vif/5",
	    "/libxl/5/device/vbd", "/libxl/5/device/vif" };
	static const struct fake_perm_rule rules[] = {
		/* Made on the way: their parents'. */
		{ "/local/domain/5/device/vbd", false, RO(0, 5) },
		{ "/local/domain/5/device/vif", false, RO(0, 5) },
		{ "/local/domain/0/backend/vbd/5", false, RW(0) },
		{ "/local/domain/0/backend/vif/5", false, RW(0) },
		{ "/local/domain/5/device/vbd/51712", true, RO(5, 0) },
		{ "/local/domain/5/device/vif/0", true, RO(5, 0) },
		{ "/local/domain/5/device/vif/0/mtu", false, RO(0, 5) },
		{ "/local/domain/0/backend/vbd/5/51712", true, RO(0, 5) },
		{ "/local/domain/0/backend/vif/5/0", true, RO(0, 5) },
		{ "/libxl/5/device", true, RW(0) },
	};
	struct vmb_dev d = dev_of(&disk, NULL), n = dev_of(NULL, &nic);
	char why[512] = "";

	(void)state;
	fake_xs.guest = DOMID;
	fake_xs.backend = FAKE_BE_CONNECT;
	d.connect_ms = n.connect_ms = 5000;
	assert_int_equal(xen_device_add(&be, DOMID, &d, why, sizeof(why)), 0);
	assert_int_equal(xen_device_add(&be, DOMID, &n, why, sizeof(why)), 0);
	fake_xs_assert_perms(roots, sizeof(roots) / sizeof(roots[0]), rules,
	    sizeof(rules) / sizeof(rules[0]));
	assert_true(fake_xs_was_tainted("/local/domain/5/device/vbd/51712/"
	    "state"));
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    false, 2000, why, sizeof(why)), 0);
	xen_devices_destroy(&be, DOMID);
	nothing_left("vif", 0);
	tainted_only_states();
}

/*
 * A hostile frontend, hot-plugged: whenever the backend code reads its
 * state, the guest writes the next of `values` there (and dom0's
 * backend says Connected, as if blkback had been fooled too).
 */
static const char *const *hostile_values;
static size_t hostile_nr, hostile_next;
static unsigned storm_writes;
#define FE_STATE	"/local/domain/5/device/vbd/51712/state"
#define BE_STATE	"/local/domain/0/backend/vbd/5/51712/state"

static void
hostile_state(const char *op, const char *path)
{
	const char *v = hostile_values[hostile_next++ % hostile_nr];

	if (strcmp(op, "read") != 0 || strcmp(path, FE_STATE) != 0)
		return;
	if (strcmp(fake_xs_val(BE_STATE) ? fake_xs_val(BE_STATE) : "", "4"))
		fake_xs_set(BE_STATE, "4");
	assert_int_equal(fake_xs_guest_write(DOMID, FE_STATE, v, strlen(v)),
	    0);
}

static double
secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Garbage states (not a number, out of range, a number that an int
 * cast turns into Connected, 4096 bytes of it): never taken for
 * Connected; the attach fails in its time, naming the state as Unknown
 * (0), and is taken back.
 */
static void
test_hostile_garbage_states(void **state)
{
	static char big[FAKE_XS_PAYLOAD + 1];
	const char *garbage[] = { "4294967300", "abc", "", "4x", "-4", "99",
	    "9223372036854775812", big };
	char why[512];

	(void)state;
	memset(big, '4', FAKE_XS_PAYLOAD);
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		struct vmb_dev v = dev_of(&disk, NULL);
		double t0 = secs();

		hostile_values = &garbage[i];
		hostile_nr = 1;
		fake_xs.meddle = hostile_state;
		v.connect_ms = 200;
		why[0] = '\0';
		assert_int_equal(xen_device_add(&be, DOMID, &v, why,
		    sizeof(why)), -ETIMEDOUT);
		if (!strstr(why, "(backend state 4, frontend state 0)"))
			print_error("state \"%.20s\": %s\n", garbage[i], why);
		assert_non_null(strstr(why, "(backend state 4, frontend "
		    "state 0)"));
		fake_xs.meddle = NULL;
		nothing_left("vbd", 51712);
		/* In its time: generous, for a loaded machine. */
		assert_true(secs() - t0 < 60);
	}
}

/* Closed, Closing, Initialising... flapping: the attach fails (EPIPE). */
static void
test_hostile_flapping(void **state)
{
	static const char *const flap[] = { "5", "6", "1", "6", "5", "3" };
	struct vmb_dev v = dev_of(&disk, NULL);
	char why[512] = "";

	(void)state;
	hostile_values = flap;
	hostile_nr = 6;
	hostile_next = 0;
	fake_xs.meddle = hostile_state;
	v.connect_ms = 5000;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -EPIPE);
	assert_non_null(strstr(why, "not connected (closed meanwhile)"));
	fake_xs.meddle = NULL;
	assert_non_null(strstr(script_log(), "block remove "));
	nothing_left("vbd", 51712);
}

/* The guest rewrites its frontend between every call of the backend's. */
static void
rewrite_frontend(const char *op, const char *path)
{
	(void)op;
	(void)path;
	(void)fake_xs_guest_write(DOMID, FE_STATE, "4", 1);
	(void)fake_xs_guest_write(DOMID, "/local/domain/5/device/vbd/51712/"
	    "junk", "x", 1);
}

/*
 * Detach while the guest keeps writing its frontend: its writes cannot
 * keep the entries (the transactions remove the frontend before anything
 * of it could conflict), and nothing is left.
 */
static void
test_hostile_detach(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	char why[512] = "";

	(void)state;
	fake_xs.backend = FAKE_BE_CONNECT;
	v.connect_ms = 2000;
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	fake_xs.backend = FAKE_BE_NORMAL;
	fake_xs.meddle = rewrite_frontend;
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    false, 300, why, sizeof(why)), 0);
	fake_xs.meddle = NULL;
	assert_non_null(strstr(script_log(), "block remove "));
	nothing_left("vbd", 51712);
}

/* Thousands of writes to the watched state while the backend waits. */
static void
storm(const char *op, const char *path)
{
	if (strcmp(op, "read") != 0 || strcmp(path, FE_STATE) != 0 ||
	    storm_writes >= 20000)
		return;
	for (int i = 0; i < 1000; i++, storm_writes++)
		assert_int_equal(fake_xs_guest_write(DOMID, FE_STATE,
		    i % 2 ? "1" : "3", 1), 0);
}

static void
test_hostile_watch_storm(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	char why[512] = "";
	double t0;

	(void)state;
	storm_writes = 0;
	fake_xs.meddle = storm;
	v.connect_ms = 300;
	t0 = secs();
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)),
	    -ETIMEDOUT);
	fake_xs.meddle = NULL;
	assert_true(storm_writes >= 2000);
	assert_true(secs() - t0 < 60);
	nothing_left("vbd", 51712);
}

/*
 * The guest points its frontend at another domain's backend, names
 * another domain, fills its directory with 4096-byte values: detach and
 * destroy take only its own device, never domain 6's.
 */
static void
test_hostile_redirect(void **state)
{
	struct vmb_dev v = dev_of(&disk, NULL);
	static char big[FAKE_XS_PAYLOAD];
	char why[512] = "", key[96];
	unsigned other;

	(void)state;
	fake_xs.guest = DOMID;
	fake_xs_set("/local/domain/6/device", "");
	fake_xs_set("/libxl/6/device", "");
	assert_int_equal(xen_device_add(&be, 6, &v, why, sizeof(why)), 0);
	assert_int_equal(xen_device_add(&be, DOMID, &v, why, sizeof(why)), 0);
	other = fake_xs_count("/local/domain/0/backend/vbd/6/");
	memset(big, 'x', sizeof(big));
	assert_int_equal(fake_xs_guest_write(DOMID, "/local/domain/5/device/"
	    "vbd/51712/backend", "/local/domain/0/backend/vbd/6/51712", 35),
	    0);
	assert_int_equal(fake_xs_guest_write(DOMID, "/local/domain/5/device/"
	    "vbd/51712/backend-id", "6", 1), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "/local/domain/5/device/vbd/51712/"
		    "junk%d", i);
		assert_int_equal(fake_xs_guest_write(DOMID, key, big,
		    sizeof(big)), 0);
	}
	/* What it may not: the backend's keys, another domain's. */
	assert_int_equal(fake_xs_guest_write(DOMID, "/local/domain/0/backend/"
	    "vbd/5/51712/script", "/tmp/x", 6), -EACCES);
	assert_int_equal(fake_xs_guest_write(DOMID, "/libxl/5/device/vbd/"
	    "51712/backend", "/local/domain/0/backend/vbd/6/51712", 35),
	    -EACCES);
	assert_int_equal(xen_device_remove(&be, DOMID, VMB_DEVICE_DISK, 51712,
	    false, 300, why, sizeof(why)), 0);
	xen_devices_destroy(&be, DOMID);
	nothing_left("vbd", 51712);
	assert_int_equal(fake_xs_count("/local/domain/0/backend/vbd/6/"),
	    other);
	assert_string_equal(fake_xs_val("/local/domain/0/backend/vbd/6/51712/"
	    "online"), "1");
	assert_null(strstr(script_log(), "remove XENBUS_PATH=backend/vbd/6"));
	tainted_only_states();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_disk_as_xl, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_vif_as_xl, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_script_name_only, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_vif_waits_for_name, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_script_fails, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_script_hangs, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_backend_never_comes, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_no_capability, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_guest_never_connects,
		    setup, teardown_dir),
		cmocka_unit_test_setup_teardown(test_attach_detach, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_builtin_block, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_vif_builtin, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_builtin_block_readonly_file,
		    setup, teardown_dir),
		cmocka_unit_test_setup_teardown(test_builtin_block_shared, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_detach_stuck, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_destroy_takes_all, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_device_perms_as_libxl,
		    setup, teardown_dir),
		cmocka_unit_test_setup_teardown(test_hostile_garbage_states,
		    setup, teardown_dir),
		cmocka_unit_test_setup_teardown(test_hostile_flapping, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_hostile_detach, setup,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_hostile_watch_storm,
		    setup, teardown_dir),
		cmocka_unit_test_setup_teardown(test_hostile_redirect, setup,
		    teardown_dir),
	};

	return cmocka_run_group_tests_name("xen-devices", tests, NULL, NULL);
}
