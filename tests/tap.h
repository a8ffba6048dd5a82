/*
 * tap.h - the TAP helper of the C test programs that print TAP
 * themselves (the cmocka unit tests have cmocka's): "ok - NAME" and
 * "not ok - NAME" lines, as scripts/run-tests counts them, and "# "
 * diagnostics.  Header only: each program includes it once.
 */
#ifndef VMBUILD_TESTS_TAP_H
#define VMBUILD_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_failures;

/* One result; the name is printf-formatted.  Returns cond. */
static int __attribute__((format(printf, 2, 3), unused))
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		tap_failures++;
	return cond;
}

/* A "# " comment line. */
static void __attribute__((format(printf, 1, 2), unused))
diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* The exit status: 1 if any result failed. */
static int __attribute__((unused))
tap_status(void)
{
	return tap_failures ? 1 : 0;
}

#endif /* VMBUILD_TESTS_TAP_H */
