/*
 * commands.c - vmctl's command table: name, handler, usage and help in
 * one place, in the order `vmctl --help` lists them.
 */
#include <string.h>

#include "vmctl.h"
#include "../libvmbuild/vmbuild.h"	/* vmb_edit_distance (editdist.c) */

#define OPT_JSON "  --json          machine output (JSON) on stdout\n"

const struct vmctl_cmd vmctl_cmds[] = {
	{ "create", cmd_create,
	  "[--no-wait] [--paused] [--console] [--ignore-unsupported] "
	  "[--dry-run] CONFIG",
	  "create a VM from an xl.cfg file and follow its build",
	  "  --no-wait       print the task id and return at once\n"
	  "  --paused        leave the new VM paused\n"
	  "  --console, -c   attach to its console once built (as xl create "
	  "-c)\n"
	  "  --ignore-unsupported\n"
	  "                  build without the xl keys vmbuild does not\n"
	  "                  implement (sdl, vnc, pci, ...), each printed as a\n"
	  "                  warning, instead of refusing the file\n"
	  "  --dry-run       check CONFIG and show where it would go, as\n"
	  "                  vmctl check; create nothing\n"
	  OPT_JSON
	  "Reads CONFIG (xl.cfg syntax) and sends it to the daemon, which\n"
	  "checks it, places the VM and builds it as a task.  vmctl follows\n"
	  "the task: a progress bar on a terminal, plain lines otherwise\n"
	  "(both on stderr), then prints the new VM's id and name.\n"
	  "Configuration errors and warnings are printed as\n"
	  "file:line: key: message.\n" },
	/* check: config.check, a dry run of create (cmd_check.c) */
	{ "check", cmd_check, "[--ignore-unsupported] CONFIG",
	  "check an xl.cfg file against this host; change nothing",
	  "  --ignore-unsupported\n"
	  "                  xl keys vmbuild does not implement are warnings\n"
	  OPT_JSON
	  "The daemon parses CONFIG and checks it against this host and\n"
	  "you: the kernel and ramdisk (passed as descriptors, as create\n"
	  "does), the disk targets you may open, the NUMA nodes, the free\n"
	  "memory per node, the bridges (not on hvsim).  Every problem is\n"
	  "printed at once as file:line: key: message on stderr (exit 1);\n"
	  "a valid file prints its normalised configuration and the nodes\n"
	  "it would be placed on.  Nothing is claimed or created; allowed\n"
	  "on the read-only socket.  JSON: {\"ok\",\"errors\":[{\"file\",\n"
	  "\"line\",\"key\",\"message\"}],\"warnings\",\"config\",\n"
	  "\"placement\":{\"nodes\",\"node_bytes\",\"reason\",\"free_bytes\"}}\n" },
	{ "list", cmd_list, "",
	  "list VMs",
	  OPT_JSON
	  "JSON: {\"vms\":[{\"id\",\"name\",\"state\",\"memory_bytes\","
	  "\"vcpus\",\"nodes\":[...]}]}\n" },
	{ "info", cmd_info, "VM",
	  "show one VM: placement, memory per node, build timings",
	  OPT_JSON
	  "VM is a name or a domain id.\n" },
	{ "destroy", cmd_destroy, "VM",
	  "destroy a VM (its memory is scrubbed in the background)",
	  OPT_JSON },
	{ "pause", cmd_pause, "VM", "pause a VM", OPT_JSON },
	{ "unpause", cmd_unpause, "VM", "unpause a VM", OPT_JSON },
	{ "shutdown", cmd_shutdown, "[--wait] [--timeout SECONDS] [--force] VM",
	  "ask a VM's guest to power off (as xl shutdown)",
	  "  --wait          return when it has shut down and its on_poweroff\n"
	  "                  action is done (destroyed, preserved, restarted)\n"
	  "  --timeout SECS  with --wait or --force: how long the guest has\n"
	  "                  (default 60)\n"
	  "  --force         if the guest cannot be asked (no PV control) or\n"
	  "                  does not answer in time, shut it down from the\n"
	  "                  hypervisor; on_poweroff then applies\n"
	  OPT_JSON
	  "The request goes to the guest's PV control node (xenstore\n"
	  "control/shutdown), if the guest announced control/feature-poweroff.\n"
	  "A guest that does not answer within the timeout is reported (exit\n"
	  "1), its request withdrawn, and left running unless --force.\n" },
	{ "reboot", cmd_reboot, "[--wait] [--timeout SECONDS] [--force] VM",
	  "ask a VM's guest to reboot (as xl reboot)",
	  "  --wait          return when it has shut down and its on_reboot\n"
	  "                  action is done (by default: running again)\n"
	  "  --timeout SECS  with --wait or --force: how long the guest has\n"
	  "                  (default 60)\n"
	  "  --force         if the guest cannot be asked or does not answer\n"
	  "                  in time, shut it down from the hypervisor with\n"
	  "                  reason reboot; on_reboot then applies\n"
	  OPT_JSON
	  "As shutdown, with control/feature-reboot.\n" },
	{ "console", cmd_console, "VM",
	  "attach to a VM's console (as xl console); Ctrl-] detaches",
	  "On a terminal, the terminal is raw until Ctrl-] detaches;\n"
	  "otherwise stdin goes to the console until it ends and the console\n"
	  "to stdout.  One client at a time per VM.  hvsim runs no guest\n"
	  "code: its VMs have no console (exit 1).\n" },
	{ "disk-attach", cmd_disk_attach, "[--wait SECONDS] VM DISKSPEC",
	  "attach a disk to a running VM (xl's disk syntax)",
	  "  --wait SECS     how long the guest has to connect it (default\n"
	  "                  30; 0: do not wait for the guest)\n"
	  OPT_JSON
	  "DISKSPEC is xl's (xl-disk-configuration(5)), e.g.\n"
	  "/srv/data.img,raw,xvdb,rw; a relative image path is taken from\n"
	  "the current directory.  The daemon attaches only an image you\n"
	  "may open yourself (read-write for rw).\n" },
	{ "disk-detach", cmd_disk_detach, "[--force] VM VDEV",
	  "detach a disk from a running VM",
	  "  --force         do not ask the guest to let go of it first\n"
	  OPT_JSON
	  "VDEV is the disk's name (xvdb) or vbd number.  The guest is asked\n"
	  "to close it; after 10 s it is taken away regardless.\n" },
	{ "net-attach", cmd_net_attach, "[--wait SECONDS] VM [VIFSPEC]",
	  "attach a network interface to a running VM (xl's vif syntax)",
	  "  --wait SECS     how long the guest has to connect it (default\n"
	  "                  30; 0: do not wait for the guest)\n"
	  OPT_JSON
	  "VIFSPEC is xl's (xl-network-configuration(5)), e.g.\n"
	  "bridge=xenbr0,mac=00:16:3e:01:02:03; empty: bridge xenbr0 and a\n"
	  "MAC in Xen's range, the lowest free devid.\n" },
	{ "net-detach", cmd_net_detach, "[--force] VM DEVID|MAC",
	  "detach a network interface from a running VM",
	  "  --force         do not ask the guest to let go of it first\n"
	  OPT_JSON },
	/* A running VM's memory and vCPUs (cmd_resize.c). */
	{ "mem-set", cmd_mem_set, "VM SIZE",
	  "set a running VM's memory (its balloon target, as xl mem-set)",
	  OPT_JSON
	  "SIZE as xl takes it: 512m, 2g, 1048576k; a plain number is MiB.\n"
	  "From 128 MiB up to the VM's maxmem (mem-max raises that).  On\n"
	  "Xen the guest's balloon driver is told (memory/target); the\n"
	  "domain's max memory becomes SIZE + 1 MiB, as libxl sets it.\n" },
	{ "mem-max", cmd_mem_max, "VM SIZE",
	  "set the most memory a running VM may balloon up to (xl mem-max)",
	  OPT_JSON
	  "SIZE as for mem-set; at least the VM's memory target.\n" },
	{ "vcpu-set", cmd_vcpu_set, "VM N",
	  "set how many of a running VM's vCPUs are online (xl vcpu-set)",
	  OPT_JSON
	  "N from 1 to the VM's maxvcpus.  On Xen the guest is told through\n"
	  "cpu/I/availability (online, offline) in xenstore.\n" },
	{ "vcpu-pin", cmd_vcpu_pin, "VM VCPU CPUS [SOFT]",
	  "pin a running VM's vCPU (or all) to host CPUs (xl vcpu-pin)",
	  OPT_JSON
	  "VCPU is a vCPU number or \"all\"; CPUS and SOFT are xl's CPU lists\n"
	  "(\"all\", \"0-3,^2\", \"nodes:1\"), the hard and soft affinity;\n"
	  "\"-\" leaves one unchanged.  A pin of all vCPUs is kept as the\n"
	  "VM's cpus= and cpus_soft= (for a restart).\n" },
	{ "vcpu-list", cmd_vcpu_list, "[VM]",
	  "list vCPUs: online, CPU, state, hard and soft affinity",
	  OPT_JSON
	  "Without VM, every VM built by vmbuildd.  On hvsim, which runs no\n"
	  "vCPU, the list is the VM's record (\"recorded_only\").\n" },
	{ "host", cmd_host, "",
	  "show the host: topology, memory per node",
	  OPT_JSON },
	{ "scrub", cmd_scrub, "[--wait [--timeout SECONDS]]",
	  "show page-scrub progress per node",
	  "  --wait          block until no node has dirty memory, showing\n"
	  "                  progress\n"
	  "  --timeout SECS  with --wait: give up (exit 1) after SECS\n"
	  "--wait also gives up (exit 1) when dirty memory has not shrunk\n"
	  "for 120 s.\n"
	  OPT_JSON
	  "JSON: {\"nodes\":[{\"node\",\"total_bytes\",\"free_bytes\","
	  "\"dirty_bytes\",\"scrubbed_bytes_total\",\n"
	  "\"scrub_rate_bytes_per_second\",\"boot_scrub_done\"}]}\n" },
	{ "stats", cmd_stats, "[--interval SECONDS]",
	  "show hypervisor counters (TLB flushes, unshadows, populate, "
	  "scrub) and rates",
	  "  --interval SECS sample twice, SECS apart (default 1), for rates;\n"
	  "                  0 samples once and shows no rates\n"
	  OPT_JSON
	  "JSON: {\"tlb_flushes\":{\"issued\",\"filtered\","
	  "\"filter_evaluations\"},\n"
	  "\"unshadow\":{\"write_flood\",\"early\",\"other\"},"
	  "\"populate\":{...},\"scrub\":{...}}\n"
	  "With --json, one sample unless --interval is given; then the\n"
	  "second sample, \"interval_seconds\" and \"rates\" (per second).\n" },
	{ "top", cmd_top, "[--iterations N] [--delay SECONDS]",
	  "live view: VMs, free and dirty memory per node, flush and "
	  "unshadow rates",
	  "  --iterations N  refresh N times, then exit (for scripts)\n"
	  "  --delay SECS    seconds between refreshes (default 1)\n"
	  OPT_JSON
	  "On a terminal the screen is redrawn in place; q or Ctrl-C quits.\n"
	  "Otherwise one snapshot is printed per refresh.\n" },
	{ "events", cmd_events, "",
	  "print daemon events (task progress, VM states, scrub) until "
	  "interrupted",
	  "  --json          one JSON notification per line\n" },
	{ "tasks", cmd_tasks, "",
	  "list tasks (builds in progress and recently finished)",
	  OPT_JSON },
	/* The everyday commands xl has (cmd_everyday.c). */
	{ "sched", cmd_sched, "[--weight N] [--cap N] VM",
	  "show or set a VM's scheduler weight and cap (credit, credit2)",
	  "  --weight N      1..65535; a VM gets CPU time in proportion to it\n"
	  "                  when VMs compete (default 256)\n"
	  "  --cap N         the most CPU it may use, in percent of one CPU,\n"
	  "                  0..100 per vCPU; 0: no cap\n"
	  OPT_JSON
	  "Without options, shows them.  As xl sched-credit2 -d VM -w N -c N;\n"
	  "kept across a daemon restart and a restart of the guest.\n" },
	{ "rename", cmd_rename, "VM NEWNAME", "rename a VM (as xl rename)",
	  OPT_JSON },
	{ "uptime", cmd_uptime, "[VM]",
	  "show how long VMs have been running (as xl uptime)",
	  OPT_JSON },
	{ "dmesg", cmd_dmesg, "[--clear]",
	  "show the hypervisor's messages (as xl dmesg)",
	  "  --clear, -c     empty the message ring after reading it\n"
	  OPT_JSON
	  "Xen's console ring; hvsim's recent log.  It may hold what the\n"
	  "hypervisor logged about any guest: the control socket only, as\n"
	  "xl dmesg needs root.\n" },
	{ "save", cmd_save, "[--checkpoint] VM FILE",
	  "save a VM's memory and state to FILE (then destroy it)",
	  "  --checkpoint    the VM keeps running afterwards\n"
	  OPT_JSON
	  "The guest is paused, its description and memory written to FILE\n"
	  "as a save stream (vmbuild-stream(5)), and its domain destroyed;\n"
	  "vmctl restore FILE builds it again.  vmctl opens FILE itself (a\n"
	  "new file is made mode 0600) and passes it to the daemon, so you\n"
	  "save only where you may write.  A save that fails or is\n"
	  "cancelled (vmctl cancel TASK) leaves the guest running and no\n"
	  "file behind.  On hvsim with phantom memory only the description\n"
	  "travels.\n" },
	{ "restore", cmd_restore, "[--paused] FILE",
	  "build a VM again from a file vmctl save wrote",
	  "  --paused        leave the restored VM paused\n"
	  OPT_JSON
	  "The daemon places the guest (scrub-aware, NUMA-local, its vNUMA\n"
	  "kept), populates its memory with the engine, writes the saved\n"
	  "memory back and unpauses it: same name, uuid and devices.  A\n"
	  "truncated or corrupt FILE is refused naming the record and its\n"
	  "offset; a restore that fails or is cancelled leaves no domain.\n" },
	{ "migrate", cmd_migrate, "[--live] [--ssh-command CMD] VM HOST",
	  "move a running VM to another host (as xl migrate)",
	  "  --live, -l      pre-copy: memory is sent while the guest runs,\n"
	  "                  then what it wrote since, round after round\n"
	  "  --ssh-command CMD, -s CMD\n"
	  "                  run CMD HOST vmctl migrate-receive (default ssh;\n"
	  "                  run by /bin/sh, so CMD may carry options)\n"
	  "  --remote-socket PATH, -r PATH\n"
	  "                  the daemon's socket on HOST\n"
	  "  --max-rounds N  live rounds at most before the guest is paused\n"
	  OPT_JSON
	  "The stream (vmbuild-stream(5)) flows over ssh's stdin and stdout;\n"
	  "nothing listens on the network.  HOST places the guest and says\n"
	  "it is ready (a host without room refuses here), the guest is\n"
	  "paused and its last state sent, HOST records and unpauses it and\n"
	  "says done; only then is the domain here destroyed.  Any failure\n"
	  "before that (connection lost, HOST's daemon gone, vmctl cancel\n"
	  "TASK) leaves the guest running here and nothing on HOST; if the\n"
	  "connection goes after the whole stream went, vmctl asks HOST\n"
	  "(migrate-receive --query) and keeps the guest where it runs.\n"
	  "Prints\n"
	  "vmbuild-migrate: downtime_ms=N total_s=N pages=N rounds=N.\n" },
	{ "migrate-receive", cmd_migrate_receive, "[--query VM]",
	  "the receiving end of vmctl migrate (run by it over ssh)",
	  "  --query VM      once no build of it is under way, say whether\n"
	  "                  VM is here: \"present UUID\" or \"absent\"\n"
	  "Reads a migration stream on stdin and answers on stdout, both\n"
	  "passed to the daemon (vm.restore, incoming); messages go to\n"
	  "stderr.  Not for interactive use.\n" },
	{ "cancel", cmd_cancel, "TASK",
	  "cancel a running task (a build): it undoes what it did",
	  OPT_JSON
	  "TASK is a task id, as vmctl tasks and vmctl create --no-wait show.\n" },
	{ "help", cmd_help, "[COMMAND]", "show help for vmctl or a command",
	  "" },
	{ NULL, NULL, NULL, NULL, NULL },
};

/*
 * xl's names for commands that mean the same here, so that an operator's
 * habits work: `vmctl block-attach` is `vmctl disk-attach`.
 */
static const struct {
	const char *xl;
	const char *name;
} xl_aliases[] = {
	{ "block-attach",	"disk-attach" },
	{ "block-detach",	"disk-detach" },
	{ "network-attach",	"net-attach" },
	{ "network-detach",	"net-detach" },
};

const struct vmctl_cmd *
vmctl_cmd_find(const char *name)
{
	const struct vmctl_cmd *c;

	for (size_t i = 0; i < sizeof(xl_aliases) / sizeof(xl_aliases[0]); i++)
		if (!strcmp(name, xl_aliases[i].xl))
			name = xl_aliases[i].name;
	for (c = vmctl_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

const char *
vmctl_cmd_nearest(const char *name)
{
	const struct vmctl_cmd *c;
	const char *best = NULL;
	size_t bestd = 3;	/* at most two edits away */

	for (c = vmctl_cmds; c->name; c++) {
		size_t d = vmb_edit_distance(name, c->name);

		if (d < bestd) {
			bestd = d;
			best = c->name;
		}
	}
	for (size_t i = 0; i < sizeof(xl_aliases) / sizeof(xl_aliases[0]);
	    i++) {
		size_t d = vmb_edit_distance(name, xl_aliases[i].xl);

		if (d < bestd) {
			bestd = d;
			best = xl_aliases[i].xl;
		}
	}
	return best;
}

void
vmctl_usage_all(FILE *out, const char *prog)
{
	const struct vmctl_cmd *c;

	fprintf(out,
	    "usage: %s [--socket PATH] [--json] [--timeout SECONDS] COMMAND "
	    "[ARGS]\n"
	    "\n"
	    "Client of vmbuildd, the vmbuild daemon.\n"
	    "\n"
	    "Options:\n"
	    "  --socket PATH      daemon control socket (default: $%s,\n"
	    "                     else %s)\n"
	    "  --json             machine output (JSON) on stdout\n"
	    "  --timeout SECONDS  longest wait for any one reply "
	    "(default 30)\n"
	    "  --help             this help; COMMAND --help for a command\n"
	    "  --version          vmctl's version and protocol\n"
	    "\n"
	    "Commands:\n", prog, VMBUILD_SOCKET_ENV, VMBUILD_DEFAULT_SOCKET);
	for (c = vmctl_cmds; c->name; c++)
		fprintf(out, "  %-11s %s\n", c->name, c->summary);
	/* Listed for the completion (vmctl.bash-completion) and the eye. */
	fprintf(out, "\nxl's names:\n");
	for (size_t i = 0; i < sizeof(xl_aliases) / sizeof(xl_aliases[0]); i++)
		fprintf(out, "  %-14s is %s\n", xl_aliases[i].xl,
		    xl_aliases[i].name);
	fprintf(out,
	    "\n"
	    "Exit status:\n"
	    "  %d  success\n"
	    "  %d  the daemon reported an error (message and code on "
	    "stderr)\n"
	    "  %d  usage error\n"
	    "  %d  cannot reach the daemon (no socket, refused, timeout, "
	    "connection lost)\n"
	    "  130  interrupted (Ctrl-C) while following a task; the daemon "
	    "goes on\n",
	    VMCTL_EXIT_OK, VMCTL_EXIT_ERROR, VMCTL_EXIT_USAGE,
	    VMCTL_EXIT_UNREACHABLE);
}
