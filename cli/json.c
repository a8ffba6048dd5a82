/*
 * json.c - small helpers over yajl: look values up in parsed trees
 * (yajl_tree) and write JSON (yajl_gen).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vmctl.h"

yajl_val
jget(yajl_val v, const char *key)
{
	return jv_get(v, key);
}

yajl_val
jpath(yajl_val v, ...)
{
	const char *key;
	va_list ap;

	va_start(ap, v);
	while (v && (key = va_arg(ap, const char *)))
		v = jget(v, key);
	va_end(ap);
	return v;
}

const char *
jstr(yajl_val v, const char *key)
{
	yajl_val s = key ? jget(v, key) : v;

	return YAJL_IS_STRING(s) ? s->u.string : NULL;
}

bool
jnum(yajl_val v, const char *key, double *ret)
{
	yajl_val n = key ? jget(v, key) : v;

	if (!YAJL_IS_NUMBER(n))
		return false;
	if (YAJL_IS_INTEGER(n))
		*ret = (double)n->u.number.i;
	else
		*ret = n->u.number.d;
	return true;
}

bool
ju64(yajl_val v, const char *key, uint64_t *ret)
{
	yajl_val n = key ? jget(v, key) : v;
	double d;

	if (YAJL_IS_INTEGER(n)) {
		if (n->u.number.i < 0)
			return false;
		*ret = (uint64_t)n->u.number.i;
		return true;
	}
	/* Beyond 2^63 yajl keeps only the double. */
	if (!jnum(n, NULL, &d) || d < 0)
		return false;
	*ret = (uint64_t)d;
	return true;
}

bool
jbool(yajl_val v, const char *key, bool *ret)
{
	yajl_val b = key ? jget(v, key) : v;

	if (YAJL_IS_TRUE(b))
		*ret = true;
	else if (YAJL_IS_FALSE(b))
		*ret = false;
	else
		return false;
	return true;
}

const char *
jtext(yajl_val v, const char *key, char *buf, size_t len)
{
	yajl_val s = key ? jget(v, key) : v;

	if (YAJL_IS_STRING(s))
		snprintf(buf, len, "%s", s->u.string);
	else if (YAJL_IS_NUMBER(s))
		snprintf(buf, len, "%s", s->u.number.r);
	else if (YAJL_IS_TRUE(s))
		snprintf(buf, len, "yes");
	else if (YAJL_IS_FALSE(s))
		snprintf(buf, len, "no");
	else
		snprintf(buf, len, "-");
	return buf;
}

yajl_gen
jgen_new(bool pretty)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	if (g && pretty) {
		yajl_gen_config(g, yajl_gen_beautify, 1);
		yajl_gen_config(g, yajl_gen_indent_string, "  ");
	}
	return g;
}

void
jgen_print(yajl_gen g)
{
	const unsigned char *buf;
	size_t len;

	if (!g)
		return;
	if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
		fwrite(buf, 1, len, stdout);
		if (len == 0 || buf[len - 1] != '\n')
			fputc('\n', stdout);
	}
	yajl_gen_free(g);
	fflush(stdout);
}

/*
 * yajl's beautifier opens a line for an empty array or map and closes it on
 * the next ("[", blank, "]"); an operator reads "[]".  Outside strings only:
 * a string may hold "[ ]" but never a raw newline.
 */
static void
print_pretty(const unsigned char *buf, size_t len)
{
	bool in_str = false, esc = false;
	size_t i, j;

	for (i = 0; i < len; i++) {
		unsigned char c = buf[i];

		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			for (j = i + 1; j < len && strchr(" \t\r\n", buf[j]); j++)
				;
			if (j < len && buf[j] == (c == '[' ? ']' : '}')) {
				fputc(c, stdout);
				c = buf[j];
				i = j;
			}
		}
		fputc(c, stdout);
	}
	if (len == 0 || buf[len - 1] != '\n')
		fputc('\n', stdout);
}

void
jprint(yajl_val v, bool pretty)
{
	yajl_gen g = jgen_new(pretty);
	const unsigned char *buf;
	size_t len;

	if (!g)
		return;
	jg_tree(g, v);
	if (!pretty) {
		jgen_print(g);
		return;
	}
	if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok)
		print_pretty(buf, len);
	yajl_gen_free(g);
	fflush(stdout);
}
