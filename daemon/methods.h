/*
 * methods.h - the table of control methods (DESIGN.md, proto.h).
 */
#ifndef VMBUILDD_METHODS_H
#define VMBUILDD_METHODS_H

#include <stdbool.h>

#include <yajl/yajl_gen.h>

struct call;

struct method {
	const char	*name;
	/* See rpc.h: 0 (result in g), -1 (error set) or CALL_DEFERRED. */
	int		(*fn)(struct call *call, yajl_gen g);
	bool		needs_write;	/* root or group vmbuild only */
};

const struct method *methods_find(const char *name);
/*
 * For handlers in other files: the VM params.vm names (NULL after
 * call_error), and a refusal of operations it cannot take now (being
 * built, another operation in flight): -1 after call_error, or 0.
 */
struct vm;
struct vm *vm_param(struct call *call);
int vm_check_idle(struct call *call, struct vm *vm);
/* Every method name into g as a JSON array. */
void methods_gen_names(yajl_gen g);

/*
 * For handlers in other files (devices.c).  vm_param: the VM params.vm
 * names, or NULL after an error on the call; vm_check_idle: -1 (error
 * set) when it is being built or busy; config_error: diagnostics as
 * E_CONFIG with data.errors, returns -1.
 */
struct vm;
struct vmb_diags;
struct vm *vm_param(struct call *call);
int vm_check_idle(struct call *call, struct vm *vm);
int config_error(struct call *call, struct vmb_diags *diags);

#endif /* VMBUILDD_METHODS_H */
