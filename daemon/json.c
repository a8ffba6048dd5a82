/*
 * json.c - helpers around yajl (see json.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

yajl_gen
jg_new(void)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	/* Strings we emit come from clients and configs: keep them valid. */
	if (g != NULL)
		yajl_gen_config(g, yajl_gen_validate_utf8, 1);
	return g;
}

void
jg_str(yajl_gen g, const char *s)
{
	if (s == NULL) {
		yajl_gen_null(g);
		return;
	}
	if (yajl_gen_string(g, (const unsigned char *)s, strlen(s)) ==
	    yajl_gen_invalid_string)
		yajl_gen_string(g, (const unsigned char *)"(invalid utf-8)",
		    15);
}

void
jg_key(yajl_gen g, const char *key)
{
	yajl_gen_string(g, (const unsigned char *)key, strlen(key));
}

void
jg_kv_str(yajl_gen g, const char *key, const char *s)
{
	jg_key(g, key);
	jg_str(g, s);
}

void
jg_u64(yajl_gen g, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);

	/* yajl_gen_integer takes a long long: go through text for u64. */
	yajl_gen_number(g, buf, n);
}

void
jg_kv_u64(yajl_gen g, const char *key, uint64_t v)
{
	jg_key(g, key);
	jg_u64(g, v);
}

void
jg_kv_i64(yajl_gen g, const char *key, int64_t v)
{
	jg_key(g, key);
	yajl_gen_integer(g, v);
}

void
jg_kv_dbl(yajl_gen g, const char *key, double v)
{
	jg_key(g, key);
	yajl_gen_double(g, v);
}

void
jg_kv_bool(yajl_gen g, const char *key, bool b)
{
	jg_key(g, key);
	yajl_gen_bool(g, b);
}

void
jg_kv_null(yajl_gen g, const char *key)
{
	jg_key(g, key);
	yajl_gen_null(g);
}

void
jg_tree(yajl_gen g, yajl_val v)
{
	if (v == NULL) {
		yajl_gen_null(g);
		return;
	}
	switch (v->type) {
	case yajl_t_string:
		jg_str(g, v->u.string);
		break;
	case yajl_t_number:
		yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
		break;
	case yajl_t_object:
		yajl_gen_map_open(g);
		for (size_t i = 0; i < v->u.object.len; i++) {
			jg_key(g, v->u.object.keys[i]);
			jg_tree(g, v->u.object.values[i]);
		}
		yajl_gen_map_close(g);
		break;
	case yajl_t_array:
		yajl_gen_array_open(g);
		for (size_t i = 0; i < v->u.array.len; i++)
			jg_tree(g, v->u.array.values[i]);
		yajl_gen_array_close(g);
		break;
	case yajl_t_true:
		yajl_gen_bool(g, 1);
		break;
	case yajl_t_false:
		yajl_gen_bool(g, 0);
		break;
	default:
		yajl_gen_null(g);
		break;
	}
}

void
jg_kv_tree(yajl_gen g, const char *key, yajl_val v)
{
	jg_key(g, key);
	jg_tree(g, v);
}

const char *
jg_text(yajl_gen g, size_t *ret_len)
{
	const unsigned char *buf;
	size_t len;

	if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok) {
		*ret_len = 0;
		return "";
	}
	*ret_len = len;
	return (const char *)buf;
}

char *
jg_finish(yajl_gen g)
{
	const char *text;
	char *out;
	size_t len;

	text = jg_text(g, &len);
	out = strndup(text, len);
	yajl_gen_free(g);
	return out;
}

yajl_val
jv_get(yajl_val v, const char *key)
{
	if (v == NULL || v->type != yajl_t_object)
		return NULL;
	for (size_t i = 0; i < v->u.object.len; i++)
		if (strcmp(v->u.object.keys[i], key) == 0)
			return v->u.object.values[i];
	return NULL;
}
