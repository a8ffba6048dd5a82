/*
 * json.h - small helpers around yajl_gen and yajl_tree, shared by the
 * daemon's replies and vmctl (which compiles this file too).
 */
#ifndef VMBUILDD_JSON_H
#define VMBUILDD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

yajl_gen jg_new(void);
void jg_str(yajl_gen g, const char *s);		/* NULL writes null */
void jg_key(yajl_gen g, const char *key);
void jg_kv_str(yajl_gen g, const char *key, const char *s);
void jg_kv_u64(yajl_gen g, const char *key, uint64_t v);
void jg_kv_i64(yajl_gen g, const char *key, int64_t v);
void jg_kv_dbl(yajl_gen g, const char *key, double v);
void jg_kv_bool(yajl_gen g, const char *key, bool b);
void jg_kv_null(yajl_gen g, const char *key);
void jg_u64(yajl_gen g, uint64_t v);
/* Copy a parsed tree (or null for NULL). */
void jg_tree(yajl_gen g, yajl_val v);
void jg_kv_tree(yajl_gen g, const char *key, yajl_val v);
/* The generated text (not NUL-terminated) and its length. */
const char *jg_text(yajl_gen g, size_t *ret_len);
/* The generated text as a malloc'd string (NULL if out of memory); frees g. */
char *jg_finish(yajl_gen g);

/* Object member of v by key, or NULL. */
yajl_val jv_get(yajl_val v, const char *key);

#endif /* VMBUILDD_JSON_H */
