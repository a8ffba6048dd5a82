/*
 * editdist.c - the distance of two names, for "did you mean": the
 * configuration's keys (keys.c) and vmctl's commands.  It depends on
 * nothing else of the library, so that vmctl can compile it in.
 */
#include <string.h>

#include "vmbuild.h"

size_t
vmb_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[32], cur[32];

	if (la >= 31 || lb >= 31)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t c = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < c)
				c = prev[j] + 1;
			if (cur[j - 1] + 1 < c)
				c = cur[j - 1] + 1;
			cur[j] = c;
		}
		memcpy(prev, cur, sizeof(cur));
	}
	return prev[lb];
}
