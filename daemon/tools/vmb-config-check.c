/*
 * vmb-config-check - parse an xl.cfg file as vmbuild would.
 *
 * Prints every diagnostic on stderr as "file:line: key: message" and, when
 * the file is valid, the guest description as JSON on stdout.  With
 * --ignore-unsupported, xl keys vmbuild does not implement are warnings
 * (vmctl create --ignore-unsupported), not errors.  Exit 0 when
 * valid, 1 when not, 2 on usage errors.  The golden tests of
 * configs/tests run it; it is also handy before `vmctl create`.  The
 * JSON is the daemon's (guestjson.c): what vm.info shows as "config".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestjson.h"
#include "vmbuild.h"

int
main(int argc, char **argv)
{
	struct vmb_diags diags = { 0 };
	struct vmb_guest *guest = NULL;
	char line[700];
	unsigned flags = VMB_CHECK_FILES;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "--ignore-unsupported")) {
		flags |= VMB_CONFIG_IGNORE_UNSUPPORTED;
		argv++;
		argc--;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: vmb-config-check [--ignore-unsupported] "
		    "FILE\n");
		return 2;
	}
	rc = vmb_config_load(argv[1], flags, &guest, &diags);
	for (size_t i = 0; i < diags.n; i++) {
		vmb_diag_format(&diags.v[i], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
	if (rc == 0 && guestjson_print(stdout, guest) < 0)
		rc = -1;
	vmb_guest_free(guest);
	vmb_diags_done(&diags);
	return rc == 0 ? 0 : 1;
}
