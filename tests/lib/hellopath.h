/*
 * hellopath.h - where the test kernel the build made is: $VMB_TEST_KERNEL,
 * else $VMB_BUILD/guest/hello.elf (VMB_BUILD=build/asan for make asan and
 * the other variants, whose own build has it; build/ for make check).
 */
#ifndef VMB_TEST_HELLOPATH_H
#define VMB_TEST_HELLOPATH_H

#include <stdio.h>
#include <stdlib.h>

static inline const char *
hello_elf_path(void)
{
	static char path[4096];
	const char *k = getenv("VMB_TEST_KERNEL");
	const char *b = getenv("VMB_BUILD");

	if (k != NULL && *k != '\0')
		return k;
	snprintf(path, sizeof(path), "%s/guest/hello.elf",
	    b != NULL && *b != '\0' ? b : "build");
	return path;
}

#endif
