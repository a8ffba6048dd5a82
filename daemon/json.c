/*
 * json.c - helpers around yajl (see json.h).
 */
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

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

/* JSON has no NaN or infinity: yajl would emit nothing, breaking the map. */
void
jg_dbl(yajl_gen g, double v)
{
	if (isfinite(v))
		yajl_gen_double(g, v);
	else
		yajl_gen_null(g);
}

void
jg_kv_dbl(yajl_gen g, const char *key, double v)
{
	jg_key(g, key);
	jg_dbl(g, v);
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

static void
jg_tree_at(yajl_gen g, yajl_val v, int depth)
{
	if (v == NULL || depth > JSON_MAX_DEPTH) {
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
			jg_tree_at(g, v->u.object.values[i], depth + 1);
		}
		yajl_gen_map_close(g);
		break;
	case yajl_t_array:
		yajl_gen_array_open(g);
		for (size_t i = 0; i < v->u.array.len; i++)
			jg_tree_at(g, v->u.array.values[i], depth + 1);
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
jg_tree(yajl_gen g, yajl_val v)
{
	jg_tree_at(g, v, 1);
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

/* The first pass of jv_parse: yajl's own lexer, callbacks that check. */
struct check {
	int	depth, max_depth;
	const char *why;
};

static int
check_scalar(void *ctx)
{
	(void)ctx;
	return 1;
}

static int
check_bool(void *ctx, int b)
{
	(void)b;
	return check_scalar(ctx);
}

static int
check_number(void *ctx, const char *s, size_t len)
{
	(void)s, (void)len;
	return check_scalar(ctx);
}

static int
check_string(void *ctx, const unsigned char *s, size_t len)
{
	struct check *c = ctx;

	if (memchr(s, '\0', len) != NULL) {
		c->why = "a string or key holds a NUL character (\\u0000)";
		return 0;
	}
	return 1;
}

static int
check_open(void *ctx)
{
	struct check *c = ctx;

	/* Past the limit: stop here, before yajl_tree ever recurses. */
	return ++c->depth <= c->max_depth;
}

static int
check_close(void *ctx)
{
	((struct check *)ctx)->depth--;
	return 1;
}

static const yajl_callbacks check_callbacks = {
	.yajl_null = check_scalar,
	.yajl_boolean = check_bool,
	.yajl_number = check_number,
	.yajl_string = check_string,
	.yajl_start_map = check_open,
	.yajl_map_key = check_string,
	.yajl_end_map = check_close,
	.yajl_start_array = check_open,
	.yajl_end_array = check_close,
};

/* yajl's message, first line, without its trailing blanks and dot. */
static void
parse_error(yajl_handle h, const char *text, size_t len, char *err,
    size_t err_len)
{
	unsigned char *msg = yajl_get_error(h, 0, (const unsigned char *)text,
	    len);
	size_t n;

	if (msg == NULL) {
		snprintf(err, err_len, "invalid JSON");
		return;
	}
	n = strcspn((char *)msg, "\n");
	while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '.'))
		n--;
	snprintf(err, err_len, "%.*s", (int)n, (char *)msg);
	yajl_free_error(h, msg);
}

yajl_val
jv_parse(const char *text, size_t len, int max_depth, char *err,
    size_t err_len)
{
	struct check c = { .max_depth = max_depth };
	char dummy[1], *copy = NULL;
	yajl_handle h;
	yajl_status st;
	yajl_val v = NULL;

	if (err == NULL || err_len == 0) {
		err = dummy;
		err_len = sizeof(dummy);
	}
	err[0] = '\0';
	h = yajl_alloc(&check_callbacks, NULL, &c);
	if (h == NULL) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	/* Strict JSON: yajl_alloc's defaults refuse comments. */
	st = yajl_parse(h, (const unsigned char *)text, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st == yajl_status_client_canceled) {
		if (c.depth > max_depth)
			snprintf(err, err_len, "nesting deeper than %d levels",
			    max_depth);
		else
			snprintf(err, err_len, "%s", c.why);
		goto out;
	}
	if (st != yajl_status_ok) {
		parse_error(h, text, len, err, err_len);
		goto out;
	}
	/* Valid, bounded JSON: now the tree (yajl_tree wants a C string). */
	copy = malloc(len + 1);
	if (copy == NULL) {
		snprintf(err, err_len, "out of memory");
		goto out;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	v = yajl_tree_parse(copy, NULL, 0);
	if (v == NULL)
		snprintf(err, err_len, "out of memory");
out:
	yajl_free(h);
	free(copy);
	return v;
}
