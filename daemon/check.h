/*
 * check.h - config.check: a dry run of vm.create (check.c).
 */
#ifndef VMBUILDD_CHECK_H
#define VMBUILDD_CHECK_H

#include <yajl/yajl_gen.h>

struct call;

int m_config_check(struct call *call, yajl_gen g);

#endif /* VMBUILDD_CHECK_H */
