/*
 * cmd_check.c - vmctl check CONFIG and vmctl create --dry-run CONFIG:
 * the daemon's config.check, which parses and checks the file against
 * this host and this client (images, disk targets, nodes, free memory,
 * bridges) and changes nothing.  Every error is printed, as
 * file:line: key: message, on stderr; on success the normalised
 * configuration and where it would go on stdout.  Exit 1 when invalid.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmctl.h"

/* config.check for the text; with descriptors, params.fds names them. */
static int
send_check(struct vmc_client *c, const char *text, const char *path,
    bool ignore, const int *fds, const char **keys, size_t nfds,
    char why[2][VMCTL_WHY_LEN], yajl_val *ret_res, struct vmc_error *err)
{
	static const char *const image_keys[2] = { "kernel", "ramdisk" };
	yajl_gen g = vmc_request(c, M_CONFIG_CHECK);

	if (g) {
		jg_kv_str(g, P_CONFIG, text);
		jg_kv_str(g, P_CONFIG_PATH, path);
		if (ignore)
			jg_kv_bool(g, P_IGNORE_UNSUPPORTED, true);
		/* Images we could not open: the daemon reports them. */
		if (why != NULL && (why[0][0] || why[1][0])) {
			jg_key(g, P_IMAGE_ERRORS);
			yajl_gen_map_open(g);
			for (int i = 0; i < 2; i++)
				if (why[i][0])
					jg_kv_str(g, image_keys[i], why[i]);
			yajl_gen_map_close(g);
		}
		vmc_gen_fds(g, keys, nfds);
	}
	return vmc_call_fds(c, g, fds, nfds, ret_res, err);
}

/* One {file,line,key,message} as "file:line: key: [warning: ]message". */
static void
print_diag(yajl_val d, const char *sev)
{
	const char *file = jstr(d, "file"), *key = jstr(d, "key");
	uint64_t line = 0;

	ju64(d, "line", &line);
	if (file && *file && line > 0)
		fprintf(stderr, "%s:%llu: ", file, (unsigned long long)line);
	else if (file && *file)
		fprintf(stderr, "%s: ", file);
	if (key && *key)
		fprintf(stderr, "%s: ", key);
	fprintf(stderr, "%s%s\n", sev, jstr(d, "message") ?
	    jstr(d, "message") : "");
}

static void
print_diags(yajl_val list, const char *sev)
{
	for (size_t i = 0; YAJL_IS_ARRAY(list) && i < list->u.array.len; i++)
		print_diag(list->u.array.values[i], sev);
}

/* Where it would go: nodes, memory on each, the host's free memory. */
static void
print_placement(yajl_val p)
{
	yajl_val nodes = jget(p, "nodes"), bytes = jget(p, "node_bytes");
	yajl_val free_b = jget(p, "free_bytes");
	char a[32], b[32];
	uint64_t n, v;

	if (!YAJL_IS_ARRAY(nodes) || !YAJL_IS_ARRAY(bytes))
		return;
	printf("placement:\n");
	for (size_t i = 0; i < nodes->u.array.len &&
	    i < bytes->u.array.len; i++) {
		if (!ju64(nodes->u.array.values[i], NULL, &n) ||
		    !ju64(bytes->u.array.values[i], NULL, &v))
			continue;
		fmt_size(v, a, sizeof(a));
		printf("  node %llu: %s", (unsigned long long)n, a);
		if (YAJL_IS_ARRAY(free_b) && n < free_b->u.array.len &&
		    ju64(free_b->u.array.values[n], NULL, &v))
			printf(" of %s free", fmt_size(v, b, sizeof(b)));
		printf("\n");
	}
	if (jstr(p, "reason"))
		printf("  why: %s\n", jstr(p, "reason"));
}

static int
show_result(struct vmctl *ctl, const char *path, yajl_val res)
{
	bool ok = false;
	yajl_val errors = jget(res, "errors");

	jbool(res, "ok", &ok);
	if (ctl->json) {
		jprint(res, false);
	} else {
		print_diags(jget(res, "warnings"), "warning: ");
		print_diags(errors, "");
	}
	if (!ok) {
		if (!ctl->json)
			fprintf(stderr, "%s: invalid (%zu error%s); nothing "
			    "was changed\n", path, YAJL_IS_ARRAY(errors) ?
			    errors->u.array.len : 0, YAJL_IS_ARRAY(errors) &&
			    errors->u.array.len == 1 ? "" : "s");
		return VMCTL_EXIT_ERROR;
	}
	if (!ctl->json) {
		printf("configuration:\n");
		jprint(jget(res, "config"), true);
		print_placement(jget(res, "placement"));
		printf("%s: valid on this host; nothing was changed\n", path);
	}
	return VMCTL_EXIT_OK;
}

int
vmctl_check_config(struct vmctl *ctl, const char *path, bool ignore)
{
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	char *text = NULL, abspath[PATH_MAX];
	yajl_val res = NULL;
	size_t len;
	int rc;

	rc = vmctl_read_file(path, &text, &len);
	if (rc < 0) {
		vmctl_warnx("check: %s: %s", path, strerror(-rc));
		return VMCTL_EXIT_USAGE;
	}
	if (!realpath(path, abspath))
		snprintf(abspath, sizeof(abspath), "%s", path);
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	rc = send_check(c, text, abspath, ignore, NULL, NULL, 0, NULL, &res,
	    &err);
	if (rc == VMC_RPC_ERROR && err.code == E_IMAGE_FD) {
		/*
		 * As create: the images go as our descriptors (images.h);
		 * one we cannot open is one more error of the config.
		 */
		char why[2][VMCTL_WHY_LEN] = { "", "" };
		const char *keys[2];
		int fds[2];
		size_t nfds = 0;

		rc = vmctl_open_images(abspath, jget(err.data, "files"), fds,
		    keys, &nfds, why);
		if (rc != VMCTL_EXIT_OK)
			goto out;
		vmc_error_done(&err);
		rc = send_check(c, text, abspath, ignore, fds, keys, nfds,
		    why, &res, &err);
		while (nfds > 0)
			close(fds[--nfds]);
	}
	if (rc != 0)
		rc = vmc_report(ctl, "check", rc, &err);
	else
		rc = show_result(ctl, path, res);
out:
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	free(text);
	return rc;
}

int
cmd_check(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "ignore-unsupported", no_argument, NULL, 'i' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	bool ignore = false;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (ch == 'i')
			ignore = true;
		else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	return vmctl_check_config(ctl, argv[optind], ignore);
}
