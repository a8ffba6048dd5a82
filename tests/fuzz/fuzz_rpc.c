/*
 * fuzz_rpc.c - the JSON-RPC request path of vmbuildd: bytes on a control
 * connection (control.c: framing, limits), each line parsed and checked
 * (json.c, rpc.c) and dispatched to its method (methods.c and what it
 * calls: configs, guest descriptions, params.fds, tasks, events), over a
 * hypervisor that is not there.  The input is what a client sends,
 * newlines and all, on a connection of the control socket; its first
 * byte, when odd, makes it the read-only socket instead.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "daemon_stub.h"
#include "fuzz.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_daemon_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	bool ro = len > 0 && (data[0] & 1);
	int sv[2];

	fuzz_daemon_init();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	if (control_attach(sv[0], ro) == NULL) {
		close(sv[1]);
		return 0;
	}
	fuzz_client_run(sv[1], data, len);
	return 0;
}
