/*
 * fmt.c - human output: sizes, rates, durations, aligned tables, and a
 * generic "key: value" rendering of JSON objects.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmctl.h"

#define KIB	1024.0
#define MIB	(1024.0 * 1024)
#define GIB	(1024.0 * 1024 * 1024)
#define TIB	(1024.0 * 1024 * 1024 * 1024)

/*
 * `v` with three significant digits ("1.23", "12.3", "123"), or without
 * decimals when it is a whole number: 4 GiB, 1.50 GiB, 12.3 ms.
 */
static const char *
sig3(double v, const char *unit, char *buf, size_t len)
{
	const char *f = v == (double)(long long)v || v >= 99.95 ? "%.0f %s" :
	    v >= 9.995 ? "%.1f %s" : "%.2f %s";

	snprintf(buf, len, f, v, unit);
	return buf;
}

/* Bytes in the largest binary unit they reach. */
static const char *
fmt_bytes(double b, const char *unit_suffix, char *buf, size_t len)
{
	static const struct {
		double	scale;
		const char *name;
	} units[] = {
		{ TIB, "TiB" }, { GIB, "GiB" }, { MIB, "MiB" }, { KIB, "KiB" },
	};
	char name[16];

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (b >= units[i].scale) {
			snprintf(name, sizeof(name), "%s%s", units[i].name,
			    unit_suffix);
			return sig3(b / units[i].scale, name, buf, len);
		}
	snprintf(buf, len, "%.0f B%s", b, unit_suffix);
	return buf;
}

const char *
fmt_size(uint64_t bytes, char *buf, size_t len)
{
	return fmt_bytes((double)bytes, "", buf, len);
}

const char *
fmt_rate(double bytes_per_sec, char *buf, size_t len)
{
	return fmt_bytes(bytes_per_sec < 0 ? 0 : bytes_per_sec, "/s", buf,
	    len);
}

const char *
fmt_count_rate(double per_sec, char *buf, size_t len)
{
	if (per_sec >= 1e6)
		snprintf(buf, len, "%.1fM/s", per_sec / 1e6);
	else if (per_sec >= 1e4)
		snprintf(buf, len, "%.1fk/s", per_sec / 1e3);
	else
		snprintf(buf, len, "%.1f/s", per_sec);
	return buf;
}

/*
 * A duration in the unit its size calls for: ns, µs, ms and s with three
 * significant digits, then minutes, hours and days as whole units.
 */
const char *
fmt_seconds(double s, char *buf, size_t len)
{
	unsigned long long t;

	if (s < 0)
		s = 0;
	if (s == 0)
		snprintf(buf, len, "0 s");
	else if (s < 1e-6)
		snprintf(buf, len, "%.0f ns", s * 1e9);
	else if (s < 1e-3)
		sig3(s * 1e6, "\u00b5s", buf, len);
	else if (s < 1)
		sig3(s * 1e3, "ms", buf, len);
	else if (s < 60)
		sig3(s, "s", buf, len);
	else if ((t = (unsigned long long)(s + 0.5)) < 3600)
		snprintf(buf, len, "%llu min %llu s", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, len, "%llu h %llu min", t / 3600, t % 3600 / 60);
	else
		snprintf(buf, len, "%llu d %llu h", t / 86400, t % 86400 / 3600);
	return buf;
}

const char *
fmt_ns(uint64_t ns, char *buf, size_t len)
{
	return fmt_seconds(ns / 1e9, buf, len);
}

const char *
fmt_pct(double done, double total, char *buf, size_t len)
{
	if (total <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.0f%%", 100.0 * done / total);
	return buf;
}

/* ------------------------------------------------------------------ */

struct table {
	int	ncols;
	char	**cells;	/* rows * ncols, row 0 the headers */
	size_t	rows, cap;
	bool	right[16];
};

struct table *
table_new(int ncols, const char *const *headers)
{
	struct table *t = calloc(1, sizeof(*t));
	int i;

	if (!t || ncols > 16) {
		free(t);
		return NULL;
	}
	t->ncols = ncols;
	t->cap = 16;
	t->cells = calloc(t->cap * (size_t)ncols, sizeof(char *));
	if (!t->cells) {
		free(t);
		return NULL;
	}
	for (i = 0; i < ncols; i++)
		t->cells[i] = strdup(headers[i]);
	t->rows = 1;
	return t;
}

void
table_right(struct table *t, int col)
{
	if (t && col >= 0 && col < t->ncols)
		t->right[col] = true;
}

void
table_add(struct table *t, ...)
{
	const char *s;
	va_list ap;
	int i;

	if (!t)
		return;
	if (t->rows == t->cap) {
		char **c = realloc(t->cells,
		    t->cap * 2 * (size_t)t->ncols * sizeof(char *));

		if (!c)
			return;
		t->cells = c;
		t->cap *= 2;
	}
	va_start(ap, t);
	for (i = 0; i < t->ncols; i++) {
		s = va_arg(ap, const char *);
		t->cells[t->rows * (size_t)t->ncols + (size_t)i] =
		    strdup(s ? s : "-");
	}
	va_end(ap);
	t->rows++;
}

void
table_print(struct table *t, FILE *out, const char *indent)
{
	size_t w[16] = { 0 }, r, l;
	const char *cell;
	int i;

	if (!t)
		return;
	for (r = 0; r < t->rows; r++)
		for (i = 0; i < t->ncols; i++) {
			cell = t->cells[r * (size_t)t->ncols + (size_t)i];
			l = cell ? strlen(cell) : 0;
			if (l > w[i])
				w[i] = l;
		}
	for (r = 0; r < t->rows; r++) {
		fputs(indent ? indent : "", out);
		for (i = 0; i < t->ncols; i++) {
			cell = t->cells[r * (size_t)t->ncols + (size_t)i];
			if (!cell)
				cell = "";
			if (i == t->ncols - 1 && !t->right[i])
				fprintf(out, "%s", cell);
			else if (t->right[i])
				fprintf(out, "%*s", (int)w[i], cell);
			else
				fprintf(out, "%-*s", (int)w[i], cell);
			if (i < t->ncols - 1)
				fputs("  ", out);
		}
		fputc('\n', out);
	}
}

void
table_free(struct table *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->rows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

/* ------------------------------------------------------------------ */

static bool
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* Keys whose values are guest-physical addresses. */
static bool
is_address(const char *key)
{
	static const char *const keys[] = { "entry", "start_info", "rsdp" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

/* A scalar as text, humanised by the unit its key names. */
static const char *
scalar_text(const char *key, yajl_val v, char *buf, size_t len)
{
	char size[32];
	uint64_t u;
	double d;

	if (key && ju64(v, NULL, &u)) {
		if (ends_with(key, "_bytes_per_second") ||
		    ends_with(key, "_bytes_per_sec"))
			return fmt_rate((double)u, buf, len);
		if (ends_with(key, "bytes") || ends_with(key, "_bytes_total"))
			return fmt_size(u, buf, len);
		if (ends_with(key, "_ns"))
			return fmt_ns(u, buf, len);
		if (is_address(key)) {
			snprintf(buf, len, "0x%llx", (unsigned long long)u);
			return buf;
		}
		/* Counts of 4 KiB pages: the memory they are, too. */
		if (!strncmp(key, "pages", 5) && u > 0) {
			snprintf(buf, len, "%llu (%s)", (unsigned long long)u,
			    fmt_size(u << 12, size, sizeof(size)));
			return buf;
		}
	}
	if (key && ends_with(key, "_seconds") && jnum(v, NULL, &d))
		return fmt_seconds(d, buf, len);
	if (key && ends_with(key, "_at") && jnum(v, NULL, &d) && d > 0) {
		time_t t = (time_t)d;
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
		return buf;
	}
	return jtext(v, NULL, buf, len);
}

static void
fmt_scalar(const char *key, yajl_val v)
{
	char buf[256];

	printf("%s\n", scalar_text(key, v, buf, sizeof(buf)));
}

void
fmt_kv(const char *key, yajl_val v, int width)
{
	int pad = width - (int)strlen(key);

	printf("%s:%*s", key, pad > 0 ? pad + 1 : 1, "");
	fmt_scalar(key, v);
}

static bool
is_scalar(yajl_val v)
{
	return !YAJL_IS_OBJECT(v) && !YAJL_IS_ARRAY(v);
}

/* An object of scalars fits on one line: "node 0, bytes 1.0 GiB". */
static bool
is_flat_object(yajl_val v)
{
	size_t i;

	if (!YAJL_IS_OBJECT(v))
		return false;
	for (i = 0; i < v->u.object.len; i++)
		if (!is_scalar(v->u.object.values[i]))
			return false;
	return true;
}

/* An array of scalars fits on one line: "0, 1". */
static bool
is_flat_array(yajl_val v)
{
	size_t i;

	if (!YAJL_IS_ARRAY(v))
		return false;
	for (i = 0; i < v->u.array.len; i++)
		if (!is_scalar(v->u.array.values[i]))
			return false;
	return true;
}

/*
 * The key that gives a child its unit: its own when it names one, else
 * its parent's ("node_bytes": {"0": N} holds sizes; "phases" seconds).
 */
static const char *
unit_key(const char *key, const char *parent)
{
	if (!parent)
		return key;
	if (!strcmp(parent, "phases"))
		return "_seconds";
	if (ends_with(parent, "bytes") && !ends_with(key, "bytes"))
		return parent;
	return key;
}

static void
fmt_tree_in(yajl_val v, int indent, const char *parent);

/* Is `key` of an object under `parent` a node of a byte map holding 0? */
static bool
hidden(const char *parent, const char *key, yajl_val x)
{
	uint64_t u;

	return parent && ends_with(parent, "bytes") && key[0] >= '0' &&
	    key[0] <= '9' && ju64(x, NULL, &u) && u == 0;
}

/* An object or array with nothing to show (all its entries hidden). */
static bool
shows_nothing(yajl_val x, const char *key)
{
	size_t i;

	if (YAJL_IS_ARRAY(x))
		return x->u.array.len == 0;
	if (!YAJL_IS_OBJECT(x))
		return false;
	for (i = 0; i < x->u.object.len; i++)
		if (!hidden(key, x->u.object.keys[i], x->u.object.values[i]))
			return false;
	return true;
}

void
fmt_tree(yajl_val v, int indent)
{
	fmt_tree_in(v, indent, NULL);
}

static void
fmt_tree_in(yajl_val v, int indent, const char *parent)
{
	char buf[256];
	size_t i, j, w = 0;
	const char *key;
	yajl_val x;

	if (YAJL_IS_ARRAY(v)) {
		for (i = 0; i < v->u.array.len; i++) {
			x = v->u.array.values[i];
			printf("%*s- ", indent, "");
			if (is_scalar(x)) {
				fmt_scalar(NULL, x);
			} else if (is_flat_object(x)) {
				for (j = 0; j < x->u.object.len; j++)
					printf("%s%s %s", j ? ", " : "",
					    x->u.object.keys[j], scalar_text(
					    x->u.object.keys[j],
					    x->u.object.values[j], buf,
					    sizeof(buf)));
				printf("\n");
			} else {
				printf("\n");
				fmt_tree_in(x, indent + 4, parent);
			}
		}
		return;
	}
	if (!YAJL_IS_OBJECT(v)) {
		printf("%*s", indent, "");
		fmt_scalar(parent, v);
		return;
	}
	for (i = 0; i < v->u.object.len; i++)
		if (strlen(v->u.object.keys[i]) > w)
			w = strlen(v->u.object.keys[i]);
	for (i = 0; i < v->u.object.len; i++) {
		key = v->u.object.keys[i];
		x = v->u.object.values[i];
		/* Per-node byte maps: only the nodes that hold something. */
		if (hidden(parent, key, x))
			continue;
		printf("%*s%s:", indent, "", key);
		if (shows_nothing(x, key)) {
			printf("%*s-\n", (int)(w - strlen(key) + 1), "");
		} else if (is_scalar(x)) {
			printf("%*s", (int)(w - strlen(key) + 1), "");
			fmt_scalar(unit_key(key, parent), x);
		} else if (is_flat_array(x)) {
			printf("%*s", (int)(w - strlen(key) + 1), "");
			for (j = 0; j < x->u.array.len; j++)
				printf("%s%s", j ? ", " : "",
				    scalar_text(key, x->u.array.values[j], buf,
				    sizeof(buf)));
			printf("\n");
		} else {
			printf("\n");
			fmt_tree_in(x, indent + 2, key);
		}
	}
}
