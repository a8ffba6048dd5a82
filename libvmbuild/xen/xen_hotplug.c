/*
 * xen_hotplug.c - running a hotplug script (/etc/xen/scripts/block,
 * vif-bridge, ...) the way libxl 4.17 runs it on Linux (libxl_linux.c,
 * libxl_device.c device_hotplug):
 *
 *   vbd:  SCRIPT add|remove
 *   vif:  SCRIPT online|offline type_if=vif
 *
 * with script=SCRIPT, XENBUS_TYPE=vbd|vif,
 * XENBUS_PATH=backend/KIND/DOMID/DEVID (relative: xenstore-read takes
 * it under dom0's /local/domain/0), XENBUS_BASE_PATH=backend, and for a
 * vif netdev=GATEWAYDEV and vif=vifDOMID.DEVID; stdin /dev/null; at
 * most 40 s (LIBXL_HOTPLUG_TIMEOUT), then the script's process group is
 * killed.  Where vmbuild differs, on purpose: the environment is only
 * those variables and a PATH (libxl passes its caller's whole
 * environment, which for a daemon holds LISTEN_FDS, NOTIFY_SOCKET and
 * the like), descriptors other than 0-2 are closed, signals are reset,
 * and the script's output is kept (its last lines) to say why it failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xen_priv.h"

#define HOTPLUG_PATH	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The child: only async-signal-safe calls between fork and exec. */
static void __attribute__((noreturn))
hotplug_child(int out, char *const argv[], char *const envp[])
{
	struct sigaction sa;
	sigset_t all;
	int null;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	/* An ignored SIGPIPE (the daemon's) would survive exec. */
	for (int s = 1; s < NSIG; s++)
		(void)sigaction(s, &sa, NULL);
	sigemptyset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
	(void)setpgid(0, 0);
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(out, 2) < 0)
		_exit(126);
	(void)close_range(3, ~0u, 0);
	if (chdir("/") != 0)
		_exit(126);
	execve(argv[0], argv, envp);
	_exit(127);
}

/* Keep the last `cap - 1` bytes the script wrote in out. */
static void
keep_tail(char *out, size_t cap, size_t *len, const char *buf, size_t n)
{
	if (cap == 0)
		return;
	if (n >= cap - 1) {
		memcpy(out, buf + n - (cap - 1), cap - 1);
		*len = cap - 1;
	} else {
		if (*len + n > cap - 1) {
			size_t drop = *len + n - (cap - 1);

			memmove(out, out + drop, *len - drop);
			*len -= drop;
		}
		memcpy(out + *len, buf, n);
		*len += n;
	}
	out[*len] = '\0';
}

int
xen_hotplug_run(const struct xen_hotplug *h, uint32_t timeout_ms,
    int *ret_status, char *out, size_t out_len)
{
	char e_script[4200], e_type[32], e_path[96], e_vif[48], e_netdev[64];
	char *argv[4], *envp[8];
	int pfd[2] = { -1, -1 }, status = 0, argc = 0, envc = 0, rc = 0;
	size_t kept = 0;
	uint64_t deadline;
	pid_t pid;
	bool exited = false;

	if (out_len)
		out[0] = '\0';
	if (snprintf(e_script, sizeof(e_script), "script=%s", h->script) >=
	    (int)sizeof(e_script))
		return -ENAMETOOLONG;
	snprintf(e_type, sizeof(e_type), "XENBUS_TYPE=%s", h->kind);
	snprintf(e_path, sizeof(e_path), "XENBUS_PATH=backend/%s/%u/%u",
	    h->kind, h->domid, h->devid);
	envp[envc++] = (char *)"PATH=" HOTPLUG_PATH;
	envp[envc++] = e_script;
	envp[envc++] = e_type;
	envp[envc++] = e_path;
	envp[envc++] = (char *)"XENBUS_BASE_PATH=backend";
	argv[argc++] = (char *)h->script;
	argv[argc++] = (char *)h->action;
	if (h->vif) {
		snprintf(e_vif, sizeof(e_vif), "vif=%s", h->vif);
		snprintf(e_netdev, sizeof(e_netdev), "netdev=%s",
		    h->netdev ? h->netdev : "");
		envp[envc++] = e_netdev;
		envp[envc++] = e_vif;
		argv[argc++] = (char *)"type_if=vif";
	}
	argv[argc] = NULL;
	envp[envc] = NULL;

	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	if (pid == 0)
		hotplug_child(pfd[1], argv, envp);
	close(pfd[1]);
	pfd[1] = -1;
	deadline = now_ms() + timeout_ms;
	/*
	 * Read its output until it exits: a script may leave a background
	 * child holding the pipe, so exit, not EOF, ends the wait.
	 */
	while (!exited) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		uint64_t now = now_ms();
		char buf[512];
		ssize_t n;
		pid_t w;

		w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			exited = true;
			break;
		}
		if (now >= deadline) {
			(void)kill(-pid, SIGKILL);
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, &status, 0);
			rc = -ETIMEDOUT;
			goto out;
		}
		if (pfd[0] >= 0 && poll(&p, 1, 50) > 0) {
			n = read(pfd[0], buf, sizeof(buf));
			if (n > 0) {
				keep_tail(out, out_len, &kept, buf, (size_t)n);
			} else if (n == 0) {
				close(pfd[0]);
				pfd[0] = -1;
			}
		} else if (pfd[0] < 0) {
			struct timespec ts = { 0, 20 * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	/* What is still in the pipe. */
	while (pfd[0] >= 0) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		char buf[512];
		ssize_t n;

		if (poll(&p, 1, 0) <= 0 || (n = read(pfd[0], buf,
		    sizeof(buf))) <= 0)
			break;
		keep_tail(out, out_len, &kept, buf, (size_t)n);
	}
	*ret_status = status;
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	return rc;
}
