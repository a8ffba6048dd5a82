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
/* Every method name into g as a JSON array. */
void methods_gen_names(yajl_gen g);

#endif /* VMBUILDD_METHODS_H */
