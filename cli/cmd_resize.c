/*
 * cmd_resize.c - a running VM's memory and vCPUs: mem-set, mem-max,
 * vcpu-set, vcpu-pin and vcpu-list (vm.mem_set, ...), as xl's commands
 * of those names take their arguments.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmctl.h"

/* A size as xl takes it: 512m, 2g, 1048576k, 4096b; plain is MiB. */
static int
parse_size(const char *s, uint64_t *ret)
{
	unsigned long long v;
	unsigned shift = 20;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (tolower((unsigned char)*end)) {
	case '\0':
	case 'm':
		break;
	case 'b':
		shift = 0;
		break;
	case 'k':
		shift = 10;
		break;
	case 'g':
		shift = 30;
		break;
	case 't':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if ((*end && end[1]) || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*ret = (uint64_t)v << shift;
	return 0;
}

/* A whole number, for vcpu-set and vcpu-pin's VCPU. */
static int
parse_uint(const char *s, uint64_t *ret)
{
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return *end || errno ? -EINVAL : 0;
}

/* Options, then between min and max operands, the first a VM. */
static int
resize_args(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv, int min, int max)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if (argc - optind < min || argc - optind > max)
		return vmctl_usage_error(cmd, "expected %d%s operand%s", min,
		    max > min ? " or more" : "", min == 1 && max == 1 ? "" :
		    "s");
	if (argc - optind > 0 && !argv[optind][0])
		return vmctl_usage_error(cmd, "empty VM name");
	return -1;
}

struct resize_req {
	const char *method;
	const char *vm;
	const char *key;	/* a number or string parameter, or NULL */
	uint64_t num;
	const char *str;	/* key's value when a string */
	const char *hard, *soft;	/* vcpu-pin */
};

/* The call; *ret_res on success, else the exit code reported. */
static int
resize_call(struct vmctl *ctl, const struct vmctl_cmd *cmd,
    const struct resize_req *r, yajl_val *ret_res)
{
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	char what[160];
	yajl_gen g;
	int rc;

	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	g = vmc_request(c, r->method);
	if (g) {
		gen_vm_ref(g, r->vm);
		if (r->key && r->str)
			jg_kv_str(g, r->key, r->str);
		else if (r->key)
			jg_kv_u64(g, r->key, r->num);
		if (r->hard)
			jg_kv_str(g, P_HARD, r->hard);
		if (r->soft)
			jg_kv_str(g, P_SOFT, r->soft);
	}
	rc = vmc_call(c, g, ret_res, &err);
	snprintf(what, sizeof(what), "%s %s", cmd->name, r->vm);
	rc = rc != 0 ? vmc_report(ctl, what, rc, &err) : VMCTL_EXIT_OK;
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

/* Call; print the result (--json) or `line` with the VM's name. */
static int
resize_do(struct vmctl *ctl, const struct vmctl_cmd *cmd,
    const struct resize_req *r, const char *line)
{
	yajl_val res = NULL;
	int rc = resize_call(ctl, cmd, r, &res);

	if (rc == VMCTL_EXIT_OK && ctl->json)
		jprint(res, false);
	else if (rc == VMCTL_EXIT_OK)
		printf("%s: %s\n", r->vm, line);
	yajl_tree_free(res);
	return rc;
}

static int
mem_cmd(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv, const char *method, const char *key, const char *what)
{
	struct resize_req r = { .method = method, .key = key };
	char line[128], sz[32];
	int rc;

	if ((rc = resize_args(ctl, cmd, argc, argv, 2, 2)) >= 0)
		return rc;
	r.vm = argv[optind];
	if (parse_size(argv[optind + 1], &r.num) < 0)
		return vmctl_usage_error(cmd, "SIZE \"%s\": not a size (as xl "
		    "takes it: 512m, 2g, 1048576k; a plain number is MiB)",
		    argv[optind + 1]);
	snprintf(line, sizeof(line), "%s %s", what,
	    fmt_size(r.num, sz, sizeof(sz)));
	return resize_do(ctl, cmd, &r, line);
}

int
cmd_mem_set(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return mem_cmd(ctl, cmd, argc, argv, M_VM_MEM_SET, P_MEMORY_BYTES,
	    "memory target set to");
}

int
cmd_mem_max(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return mem_cmd(ctl, cmd, argc, argv, M_VM_MEM_MAX, P_MAXMEM_BYTES,
	    "maxmem set to");
}

int
cmd_vcpu_set(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	struct resize_req r = { .method = M_VM_VCPU_SET, .key = P_VCPUS };
	char line[64];
	int rc;

	if ((rc = resize_args(ctl, cmd, argc, argv, 2, 2)) >= 0)
		return rc;
	r.vm = argv[optind];
	if (parse_uint(argv[optind + 1], &r.num) < 0)
		return vmctl_usage_error(cmd, "N \"%s\": not a number of vCPUs",
		    argv[optind + 1]);
	snprintf(line, sizeof(line), "%llu vCPUs online",
	    (unsigned long long)r.num);
	return resize_do(ctl, cmd, &r, line);
}

int
cmd_vcpu_pin(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	struct resize_req r = { .method = M_VM_VCPU_PIN, .key = P_VCPU };
	char line[256];
	int rc;

	if ((rc = resize_args(ctl, cmd, argc, argv, 3, 4)) >= 0)
		return rc;
	r.vm = argv[optind];
	if (!strcmp(argv[optind + 1], "all"))
		r.str = "all";
	else if (parse_uint(argv[optind + 1], &r.num) < 0)
		return vmctl_usage_error(cmd, "VCPU \"%s\": a vCPU number or "
		    "\"all\"", argv[optind + 1]);
	r.hard = argv[optind + 2];
	r.soft = argc - optind > 3 ? argv[optind + 3] : NULL;
	snprintf(line, sizeof(line), "vCPU %s pinned: hard %.64s, soft %.64s",
	    argv[optind + 1], r.hard, r.soft ? r.soft : "-");
	return resize_do(ctl, cmd, &r, line);
}

/* One VM's vCPUs as xl vcpu-list prints them. */
static void
print_vcpus(yajl_val res, bool header)
{
	yajl_val list = jget(res, "vcpus");
	char cpu[16], t[32], id[16], vc[16];
	double secs;

	if (header)
		printf("%-16s %5s %5s %4s %-8s %9s  %-12s %s\n", "Name", "ID",
		    "VCPU", "CPU", "State", "Time(s)", "Affinity", "(Hard / "
		    "Soft)");
	for (size_t i = 0; YAJL_IS_ARRAY(list) && i < list->u.array.len;
	    i++) {
		yajl_val v = list->u.array.values[i];

		jtext(v, "cpu", cpu, sizeof(cpu));
		if (jnum(v, "cpu_time_seconds", &secs))
			snprintf(t, sizeof(t), "%.1f", secs);
		else
			snprintf(t, sizeof(t), "-");
		printf("%-16s %5s %5s %4s %-8s %9s  %s / %s\n",
		    jstr(res, "vm") ? jstr(res, "vm") : "?",
		    jtext(res, "id", id, sizeof(id)),
		    jtext(v, "vcpu", vc, sizeof(vc)), cpu,
		    jstr(v, "state") ? jstr(v, "state") : "-", t,
		    jstr(v, "hard_affinity") ? jstr(v, "hard_affinity") : "-",
		    jstr(v, "soft_affinity") ? jstr(v, "soft_affinity") : "-");
	}
}

int
cmd_vcpu_list(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	struct resize_req r = { .method = M_VM_VCPU_LIST };
	yajl_val res = NULL, vms = NULL, list;
	struct vmc_error err = { 0 };
	struct vmc_client *c = NULL;
	yajl_gen out = NULL;
	bool header = true;
	int rc;

	if ((rc = resize_args(ctl, cmd, argc, argv, 0, 1)) >= 0)
		return rc;
	if (argc - optind == 1) {
		r.vm = argv[optind];
		rc = resize_call(ctl, cmd, &r, &res);
		if (rc == VMCTL_EXIT_OK && ctl->json)
			jprint(res, false);
		else if (rc == VMCTL_EXIT_OK)
			print_vcpus(res, true);
		yajl_tree_free(res);
		return rc;
	}
	/* Every VM of ours: those another toolstack built have no list. */
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	rc = vmc_call0(c, M_VM_LIST, &vms, &err);
	vmc_close(c);
	if (rc != 0) {
		rc = vmc_report(ctl, "vcpu-list", rc, &err);
		vmc_error_done(&err);
		return rc;
	}
	list = jget(vms, "vms");
	if (ctl->json) {
		out = jgen_new(false);
		yajl_gen_map_open(out);
		jg_key(out, "vms");
		yajl_gen_array_open(out);
	}
	for (size_t i = 0; YAJL_IS_ARRAY(list) && i < list->u.array.len;
	    i++) {
		bool quiet = ctl->json;

		r.vm = jstr(list->u.array.values[i], "name");
		if (r.vm == NULL)
			continue;
		/* Errors (a foreign VM) go to stderr; the others are listed. */
		ctl->json = false;
		if (resize_call(ctl, cmd, &r, &res) == VMCTL_EXIT_OK) {
			if (quiet)
				jg_tree(out, res);
			else
				print_vcpus(res, header);
			header = false;
		}
		ctl->json = quiet;
		yajl_tree_free(res);
		res = NULL;
	}
	if (out) {
		yajl_gen_array_close(out);
		yajl_gen_map_close(out);
		jgen_print(out);
	}
	yajl_tree_free(vms);
	return VMCTL_EXIT_OK;
}
