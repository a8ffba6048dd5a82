/*
 * params.h - request helpers the method handlers share (methods.c,
 * devices.c, shutdown.c, console.c): the VM a call names, the refusal
 * of operations it cannot take now, and diagnostics as E_CONFIG.
 * They sit on rpc.h and the registry (vm.h), below every handler.
 */
#ifndef VMBUILDD_PARAMS_H
#define VMBUILDD_PARAMS_H

struct call;
struct vm;
struct vmb_diags;

/*
 * The VM params.vm names (or params.name / params.id), or NULL after
 * an error on the call.
 */
struct vm *vm_param(struct call *call);
/* -1 (error set) when it is being built, busy or being destroyed. */
int vm_check_idle(struct call *call, struct vm *vm);
/* Diagnostics as E_CONFIG with data.errors; returns -1. */
int config_error(struct call *call, struct vmb_diags *diags);

#endif /* VMBUILDD_PARAMS_H */
