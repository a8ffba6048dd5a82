/*
 * cmd_dev.c - hot-plug: disk-attach, disk-detach, net-attach,
 * net-detach (vm.disk_attach, ...: xl block-attach and network-attach).
 *
 * The daemon answers when the device is set up (or taken back): the
 * backend, the hotplug script, and on attach the guest's frontend
 * connecting, up to --wait seconds.  That can take longer than the
 * usual reply timeout, so these commands wait as long as the daemon
 * may take.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmctl.h"

/* What the daemon may spend besides the guest: InitWait, script, undo. */
#define DEV_DAEMON_S	120

/*
 * A relative image path in a disk specification, made absolute: the
 * daemon does not know our working directory.  The target is the first
 * field that is no key=value nor flag, or target=; a path with a
 * deprecated prefix ("phy:") keeps it.
 */
static int
absolute_target(const char *spec, char **ret)
{
	const char *field = spec, *start = NULL, *end, *colon;
	char abs[PATH_MAX], *path, *out;
	size_t len;

	*ret = NULL;
	for (;;) {
		while (*field == ' ' || *field == '\t')
			field++;
		end = strchr(field, ',');
		len = end ? (size_t)(end - field) : strlen(field);
		if (!strncmp(field, "target=", 7)) {
			start = field + 7;
			len = strlen(start);
			break;
		}
		if (len && !memchr(field, '=', len)) {
			start = field;
			break;
		}
		if (!end)
			return 0;
		field = end + 1;
	}
	/* "phy:/x": only the part after the last prefix is the path. */
	while ((colon = memchr(start, ':', len)) != NULL) {
		len -= (size_t)(colon + 1 - start);
		start = colon + 1;
	}
	if (len == 0 || start[0] == '/')
		return 0;
	if (!(path = strndup(start, len)))
		return -ENOMEM;
	if (!realpath(path, abs)) {
		free(path);
		return 0;	/* the daemon says what is wrong with it */
	}
	free(path);
	if (asprintf(&out, "%.*s%s%s", (int)(start - spec), spec, abs,
	    start + len) < 0)
		return -ENOMEM;
	*ret = out;
	return 0;
}

/*
 * One device call: VM, then an operand (the specification, or which
 * device), --wait SECONDS (attach) or --force (detach).
 */
static int
dev_call(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv, const char *method, const char *key, bool attach,
    int operands)
{
	static const struct option opts[] = {
		{ "wait", required_argument, NULL, 'w' },
		{ "force", no_argument, NULL, 'f' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_val res = NULL, dev;
	char *fixed = NULL, *end, what[160];
	const char *vm, *arg;
	long wait = -1;
	double devid = 0;
	bool force = false;
	yajl_gen g;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (ch == 'w' && attach) {
			errno = 0;
			wait = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end || errno || wait < 0 ||
			    wait > 600)
				return vmctl_usage_error(cmd, "--wait wants "
				    "seconds, 0 to 600");
		} else if (ch == 'f' && !attach) {
			force = true;
		} else if (ch == 'w' || ch == 'f') {
			return vmctl_usage_error(cmd, "--%s is for %s",
			    ch == 'w' ? "wait" : "force", ch == 'w' ?
			    "attach" : "detach");
		} else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0) {
			return rc;
		}
	}
	if (operands == 1 && argc - optind == 1) {
		arg = "";		/* net-attach VM: a vif of defaults */
	} else {
		if ((rc = vmctl_operands(cmd, argc, argv, 2)) >= 0)
			return rc;
		arg = argv[optind + 1];
	}
	vm = argv[optind];
	if (!vm[0])
		return vmctl_usage_error(cmd, "empty VM name");
	if (attach && !strcmp(key, P_DISK)) {
		if (absolute_target(arg, &fixed) < 0)
			return VMCTL_EXIT_ERROR;
		if (fixed)
			arg = fixed;
	}
	/* As long as the daemon may take, guest included. */
	if (ctl->timeout_ms < (DEV_DAEMON_S + (wait < 0 ? 30 : wait)) * 1000)
		ctl->timeout_ms = (int)(DEV_DAEMON_S + (wait < 0 ? 30 : wait)) *
		    1000;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	g = vmc_request(c, method);
	if (g) {
		jg_kv_str(g, P_VM, vm);
		jg_kv_str(g, key, arg);
		if (wait >= 0)
			jg_kv_i64(g, P_TIMEOUT, wait);
		if (force)
			jg_kv_bool(g, P_FORCE, true);
	}
	rc = vmc_call(c, g, &res, &err);
	snprintf(what, sizeof(what), "%s %s", cmd->name, vm);
	if (rc != 0) {
		rc = vmc_report(ctl, what, rc, &err);
		goto out;
	}
	rc = VMCTL_EXIT_OK;
	if (ctl->json) {
		jprint(res, false);
		goto out;
	}
	dev = jget(res, key);
	jnum(res, "devid", &devid);
	if (attach && !strcmp(key, P_DISK))
		printf("attached disk %s (vbd %.0f) to %s%s\n",
		    jstr(dev, "vdev") ? jstr(dev, "vdev") : "?", devid, vm,
		    YAJL_IS_TRUE(jget(res, "recorded_only")) ?
		    " (recorded only: the hypervisor has no I/O)" : "");
	else if (attach) {
		printf("attached vif %.0f (%s) to %s%s\n", devid,
		    jstr(dev, "mac") ? jstr(dev, "mac") : "-", vm,
		    YAJL_IS_TRUE(jget(res, "recorded_only")) ?
		    " (recorded only: the hypervisor has no I/O)" : "");
	} else
		printf("detached %s %s from %s\n", !strcmp(key, P_DISK) ?
		    "disk" : "vif", jstr(res, key) ? jstr(res, key) : arg, vm);
out:
	free(fixed);
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

int
cmd_disk_attach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return dev_call(ctl, cmd, argc, argv, M_VM_DISK_ATTACH, P_DISK, true,
	    2);
}

int
cmd_disk_detach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return dev_call(ctl, cmd, argc, argv, M_VM_DISK_DETACH, P_DISK, false,
	    2);
}

int
cmd_net_attach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return dev_call(ctl, cmd, argc, argv, M_VM_NET_ATTACH, P_VIF, true,
	    1);
}

int
cmd_net_detach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return dev_call(ctl, cmd, argc, argv, M_VM_NET_DETACH, P_VIF, false,
	    2);
}
