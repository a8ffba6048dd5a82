/*
 * diag.c - configuration diagnostics: collected, never logged.
 *
 * Every config and validation error becomes one struct vmb_diag that names
 * the file, the line and the key, so that a front end can print them all
 * at once ("file:line: key: message") instead of stopping at the first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

/* Bounds the array so that a hostile config cannot grow it forever. */
#define VMB_DIAGS_MAX	256

int
vmb__diag_add(struct vmb_diags *diags, enum vmb_severity sev,
    const char *file, int line, const char *key, const char *fmt, ...)
{
	struct vmb_diag *d, *v;
	va_list ap;
	int rc = sev == VMB_ERROR ? -EINVAL : 0;

	if (!diags)
		return rc;
	if (sev == VMB_ERROR)
		diags->nr_errors++;
	if (diags->n >= VMB_DIAGS_MAX)
		return rc;
	v = realloc(diags->v, (diags->n + 1) * sizeof(*v));
	if (!v)
		return rc;	/* nr_errors still counts it */
	diags->v = v;
	d = &v[diags->n++];
	memset(d, 0, sizeof(*d));
	d->severity = sev;
	d->line = line;
	snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
	snprintf(d->key, sizeof(d->key), "%s", key ? key : "");
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return rc;
}

void
vmb_diag_format(const struct vmb_diag *d, char *buf, size_t len)
{
	char where[300] = "";
	const char *sev = d->severity == VMB_WARNING ? "warning: " : "";

	if (!buf || len == 0)
		return;
	if (d->file[0] && d->line > 0)
		snprintf(where, sizeof(where), "%s:%d: ", d->file, d->line);
	else if (d->file[0])
		snprintf(where, sizeof(where), "%s: ", d->file);
	if (d->key[0])
		snprintf(buf, len, "%s%s: %s%s", where, d->key, sev, d->msg);
	else
		snprintf(buf, len, "%s%s%s", where, sev, d->msg);
}

void
vmb_diags_done(struct vmb_diags *diags)
{
	if (!diags)
		return;
	free(diags->v);
	diags->v = NULL;
	diags->n = 0;
	diags->nr_errors = 0;
}

void
vmb__why(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

int
vmb_diags_add(struct vmb_diags *diags, enum vmb_severity sev,
    const char *file, int line, const char *key, const char *msg)
{
	return vmb__diag_add(diags, sev, file, line, key, "%s", msg);
}
