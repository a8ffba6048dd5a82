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
void jg_dbl(yajl_gen g, double v);
void jg_kv_dbl(yajl_gen g, const char *key, double v);
void jg_kv_bool(yajl_gen g, const char *key, bool b);
void jg_kv_null(yajl_gen g, const char *key);
void jg_u64(yajl_gen g, uint64_t v);
/*
 * Copy a parsed tree (or null for NULL).  Trees come from jv_parse(),
 * whose depth is bounded; deeper levels than JSON_MAX_DEPTH (a tree
 * built some other way) are written as null, not recursed into.
 */
void jg_tree(yajl_gen g, yajl_val v);
void jg_kv_tree(yajl_gen g, const char *key, yajl_val v);
/* The generated text (not NUL-terminated) and its length. */
const char *jg_text(yajl_gen g, size_t *ret_len);
/* The generated text as a malloc'd string (NULL if out of memory); frees g. */
char *jg_finish(yajl_gen g);

/* Object member of v by key, or NULL. */
yajl_val jv_get(yajl_val v, const char *key);

/*
 * Parse one JSON text of `len` bytes (not NUL-terminated) into a tree,
 * refusing what yajl_tree_parse() would accept but the rest of the code
 * cannot take: comments (JSON has none), nesting deeper than max_depth
 * (yajl_tree_free() and every walker recurse per level), and a NUL byte
 * in a string or key (\u0000: C strings would end early, so that
 * "vm.list\u0000junk" would read as "vm.list").  NULL with a one-line
 * reason in err (which may be NULL) on failure; free with
 * yajl_tree_free().
 */
#define JSON_MAX_DEPTH	64
yajl_val jv_parse(const char *text, size_t len, int max_depth, char *err,
    size_t err_len);

#endif /* VMBUILDD_JSON_H */
