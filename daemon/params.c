/*
 * params.c - request helpers the method handlers share (see params.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "params.h"
#include "proto.h"
#include "reap.h"
#include "rpc.h"
#include "vm.h"

/* The VM named by params.vm (or params.name / params.id). */
struct vm *
vm_param(struct call *call)
{
	yajl_val v = jv_get(call->params, P_VM);
	const char *key = P_VM;
	struct vm *vm = NULL;

	if (v == NULL) {
		if ((v = jv_get(call->params, "name")) != NULL)
			key = "name";
		else if ((v = jv_get(call->params, "id")) != NULL)
			key = "id";
	}
	if (v == NULL || YAJL_IS_NULL(v)) {
		call_error(call, RPC_INVALID_PARAMS, 0,
		    "params.vm (a name or a domain id) is required");
		return NULL;
	}
	if (YAJL_IS_STRING(v)) {
		const char *s = v->u.string;
		char *end;

		vm = vm_find_name(s);
		if (vm == NULL && s[0] >= '0' && s[0] <= '9') {
			unsigned long id = strtoul(s, &end, 10);

			if (*end == '\0' && id < VMB_DOMID_INVALID)
				vm = vm_find_domid(id);
		}
		if (vm == NULL)
			call_error(call, E_NO_SUCH_VM, 0, "no VM named \"%.64s\"",
			    s);
		return vm;
	}
	if (YAJL_IS_INTEGER(v)) {
		long long id = YAJL_GET_INTEGER(v);

		if (id >= 0 && id < VMB_DOMID_INVALID)
			vm = vm_find_domid(id);
		if (vm == NULL)
			call_error(call, E_NO_SUCH_VM, 0, "no domain %lld", id);
		return vm;
	}
	call_error(call, RPC_INVALID_PARAMS, 0,
	    "params.%s must be a string (name) or an integer (domain id)",
	    key);
	return NULL;
}

/* Refuse operations a VM cannot take now. */
int
vm_check_idle(struct call *call, struct vm *vm)
{
	if (vm->state == VM_BUILDING)
		return call_error(call, E_BAD_STATE, 0, "%s is being built "
		    "(task %llu; vmctl cancel %llu stops it)", vm->name,
		    (unsigned long long)vm->task,
		    (unsigned long long)vm->task);
	if (vm->busy)
		return call_error(call, E_BAD_STATE, 0, "another operation on "
		    "%s is in progress", vm->name);
	if (vm->state == VM_DESTROYING) {
		/* An operator asking to destroy it: try again now. */
		if (strcmp(call->method, M_VM_DESTROY) == 0 && vm->reap)
			reap_now(vm);
		return call_error(call, E_BAD_STATE, 0, "%s is being destroyed "
		    "(its build failed and could not be undone; %u tries have "
		    "failed, %s)", vm->name, reap_tries(vm),
		    strcmp(call->method, M_VM_DESTROY) ? "trying again later" :
		    "trying again now");
	}
	return 0;
}

/* Diagnostics to E_CONFIG with data.errors. */
int
config_error(struct call *call, struct vmb_diags *diags)
{
	char **list = NULL, first[700] = "";
	size_t n = 0;

	if (diags->n > 0)
		list = calloc(diags->n, sizeof(*list));
	for (size_t i = 0; list != NULL && i < diags->n; i++) {
		char buf[700];

		if (diags->v[i].severity != VMB_ERROR)
			continue;
		vmb_diag_format(&diags->v[i], buf, sizeof(buf));
		if (n == 0)
			snprintf(first, sizeof(first), "%s", buf);
		list[n++] = strdup(buf);
	}
	call_error(call, E_CONFIG, 0, "invalid configuration (%zu error%s)%s%s",
	    n, n == 1 ? "" : "s", n > 0 ? ": " : "", first);
	call_error_list(call, list, n);
	return -1;
}
