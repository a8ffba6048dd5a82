/*
 * methods.h - the table of control methods (DESIGN.md, proto.h).
 */
#ifndef VMBUILDD_METHODS_H
#define VMBUILDD_METHODS_H

#include <yajl/yajl_gen.h>

#include "rpc.h"

/* The table's entry for `name`, or NULL: main.c gives it to rpc.c. */
const struct method *methods_find(const char *name);
/* Every method name into g as a JSON array. */
void methods_gen_names(yajl_gen g);

#endif /* VMBUILDD_METHODS_H */
