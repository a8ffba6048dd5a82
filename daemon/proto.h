/*
 * proto.h - the control protocol of vmbuildd, shared by daemon/ and cli/.
 *
 * JSON-RPC 2.0 over a Unix stream socket, one JSON object per line.
 * Requests:  {"jsonrpc":"2.0","id":ID,"method":M,"params":{...}}
 * Responses: {"jsonrpc":"2.0","id":ID,"result":...}
 *            {"jsonrpc":"2.0","id":ID,"error":{"code":C,"message":S,"data":{...}}}
 * Notifications (events) have no id: {"jsonrpc":"2.0","method":E,"params":{...}}.
 * Unknown keys in params are ignored.  The shapes of results and events
 * are in daemon/README.md, the commands of vmctl in cli/vmctl.md.
 *
 * Application error codes start at 1000 and are never reused: a retired
 * code stays here, commented out, so that nobody gives it a new meaning.
 */
#ifndef VMBUILD_PROTO_H
#define VMBUILD_PROTO_H

#define VMBUILD_PROTO_VERSION	1

#define VMBUILD_DEFAULT_SOCKET	"/run/vmbuild/control.sock"
/* Read-only methods for anyone (mode 0666), beside the control socket. */
#define VMBUILD_DEFAULT_RO_SOCKET "/run/vmbuild/control-ro.sock"
#define VMBUILD_SOCKET_ENV	"VMBUILD_SOCKET"
#define VMBUILD_DEFAULT_STATE	"/var/lib/vmbuild"
#define VMBUILD_DEFAULT_METRICS	"127.0.0.1:9741"

/* Default limits (all configurable on vmbuildd's command line). */
#define VMBUILD_MAX_REQUEST	(1024 * 1024)	/* bytes in one request line */
#define VMBUILD_MAX_CONNECTIONS	256		/* on the control socket */
#define VMBUILD_MAX_RO_CONNECTIONS 256		/* on the read-only socket */
#define VMBUILD_MAX_USER_CONNECTIONS 32		/* one uid's (root: no limit) */
#define VMBUILD_IDLE_TIMEOUT	120		/* s a connection may do nothing */
#define VMBUILD_MAX_TASKS	64		/* tasks running at once */
#define VMBUILD_REQUEST_TIMEOUT	30		/* s for a request line to complete */
#define VMBUILD_MAX_OUTPUT	(64u << 20)	/* bytes queued for all clients */
#define VMBUILD_MAX_METRICS_CONNECTIONS 256	/* HTTP clients at once */
#define VMBUILD_METRICS_REQUEST_TIMEOUT 10	/* s for an HTTP request */
#define VMBUILD_HYPERVISOR_TIMEOUT 30		/* s for one hypervisor call */
#define VMBUILD_RESTART_BACKOFF	60		/* s: longest wait to restart */

/* Methods. */
#define M_SERVER_HELLO		"server.hello"
#define M_HOST_INFO		"host.info"
#define M_HOST_SCRUB		"host.scrub"
#define M_HOST_COUNTERS		"host.counters"
#define M_VM_CREATE		"vm.create"
#define M_VM_LIST		"vm.list"
#define M_VM_INFO		"vm.info"
#define M_VM_DESTROY		"vm.destroy"
#define M_VM_PAUSE		"vm.pause"
#define M_VM_UNPAUSE		"vm.unpause"
#define M_VM_SHUTDOWN		"vm.shutdown"
#define M_VM_REBOOT		"vm.reboot"
#define M_VM_CONSOLE		"vm.console"
#define M_TASK_LIST		"task.list"
#define M_TASK_GET		"task.get"
#define M_TASK_CANCEL		"task.cancel"
#define M_EVENTS_SUBSCRIBE	"events.subscribe"
#define M_VM_DISK_ATTACH	"vm.disk_attach"
#define M_VM_DISK_DETACH	"vm.disk_detach"
#define M_VM_NET_ATTACH		"vm.net_attach"
#define M_VM_NET_DETACH		"vm.net_detach"
/* Everyday settings (daemon/everyday.c). */
#define M_VM_SCHED_GET		"vm.sched_get"
#define M_VM_SCHED_SET		"vm.sched_set"
#define M_VM_RENAME		"vm.rename"
#define M_VM_UPTIME		"vm.uptime"
#define M_HOST_DMESG		"host.dmesg"
#define M_VM_MEM_SET		"vm.mem_set"
#define M_VM_MEM_MAX		"vm.mem_max"
#define M_VM_VCPU_SET		"vm.vcpu_set"
#define M_VM_VCPU_PIN		"vm.vcpu_pin"
#define M_VM_VCPU_LIST		"vm.vcpu_list"
/* Save and restore (save.c) */
#define M_VM_SAVE		"vm.save"
#define M_VM_RESTORE		"vm.restore"
/* Migration's sending end (migrate.c); the receiver is vm.restore's */
#define M_VM_MIGRATE_SEND	"vm.migrate_send"
/* config.check: a dry run of vm.create (check.c) */
#define M_CONFIG_CHECK		"config.check"

/*
 * Parameters (keys of "params"; all optional unless marked).
 *
 * A VM is named by P_VM: its name (string) or its domain id (integer).
 * "name" (string) and "id" (integer) are accepted as well.  A task is
 * named by P_TASK (integer task id; "id" is accepted too).
 *
 *   vm.create        P_CONFIG (xl.cfg text) and P_CONFIG_PATH (where it
 *                    came from: relative kernel paths and error messages),
 *                    or P_GUEST (an object with xl.cfg key names);
 *                    P_WAIT (bool, default false: reply {"task":N} at once;
 *                    true: reply when the build ends, with the VM's info);
 *                    P_PAUSED (bool: leave the domain paused);
 *                    P_FDS ({"kernel":I,"ramdisk":J}: the images are the
 *                    I-th and J-th descriptors sent with the request's
 *                    bytes, SCM_RIGHTS; see daemon/README.md);
 *                    P_IGNORE_UNSUPPORTED (bool: xl keys vmbuild does
 *                    not implement are warnings, listed in the result's
 *                    "warnings", not errors).
 *   config.check     P_CONFIG (required), P_CONFIG_PATH, P_FDS and
 *                    P_IGNORE_UNSUPPORTED as vm.create; P_IMAGE_ERRORS
 *                    (object: "kernel"/"ramdisk" -> why the client could
 *                    not open it: reported as that key's error, the image
 *                    not looked at); result {"ok",
 *                    "errors":[{file,line,key,message}], "warnings",
 *                    "config" (guestjson), "placement" {nodes,
 *                    node_bytes, reason, free_bytes} or null}; changes
 *                    nothing, allowed on the read-only socket
 *   vm.info/destroy/pause/unpause   P_VM (required)
 *   vm.disk_attach   P_VM, P_DISK (required: an xl disk specification
 *                    with an absolute target), P_TIMEOUT (s the guest has
 *                    to connect its frontend, default 30, 0: no wait)
 *   vm.disk_detach   P_VM, P_DISK (required: a vdev or a vbd number),
 *                    P_FORCE (bool: do not ask the guest first)
 *   vm.net_attach    P_VM, P_VIF (an xl vif specification; default ""),
 *                    P_TIMEOUT
 *   vm.net_detach    P_VM, P_VIF (required: a devid or a MAC), P_FORCE
 *   vm.shutdown/reboot  P_VM (required); P_WAIT (bool: answer when the
 *                    domain has shut down and its on_* action is done);
 *                    P_TIMEOUT (seconds to wait for the guest, 1-3600,
 *                    default 60); P_FORCE (bool: shut it down from the
 *                    hypervisor if the guest cannot be asked or does not
 *                    answer in time)
 *   vm.mem_set       P_VM, P_MEMORY_BYTES (required: the balloon target,
 *                    a multiple of 4 KiB, up to the VM's maxmem; not
 *                    lowered below 128 MiB)
 *   vm.mem_max       P_VM, P_MAXMEM_BYTES (required: the static max, at
 *                    least the target)
 *   vm.vcpu_set      P_VM, P_VCPUS (required: vCPUs online, 1..maxvcpus)
 *   vm.vcpu_pin      P_VM, P_VCPU (required: a vCPU number or "all"),
 *                    P_HARD (required) and P_SOFT: CPU lists in xl's
 *                    syntax ("all", "0-3,^2", "nodes:1"), "-": unchanged
 *   vm.vcpu_list     P_VM (required)
 *   vm.console       P_VM (required); the reply carries the pty's
 *                    descriptor (SCM_RIGHTS, with its first byte)
 *   task.get/cancel  P_TASK (required)
 *   vm.sched_get     P_VM (required)
 *   vm.sched_set     P_VM (required), P_WEIGHT (1..65535) and/or P_CAP
 *                    (percent of one CPU, 0..100 per vCPU; 0: no cap)
 *   vm.rename        P_VM (required), P_NAME_NEW (required)
 *   vm.uptime        P_VM (default: every VM with a domain)
 *   host.dmesg       P_CLEAR (bool: empty the ring after reading it)
 *   vm.save          P_VM (required), P_FDS ({"file":I}, required: the
 *                    stream goes to the I-th descriptor sent with the
 *                    request, open for writing: a regular file or a
 *                    pipe), P_CHECKPOINT (bool: the guest keeps running),
 *                    P_WAIT (bool: answer when the save ends); result
 *                    {"task","vm","bytes","pages","memory"}
 *   vm.restore       P_FDS ({"file":I}, required, open for reading),
 *                    P_WAIT, P_PAUSED; answered as vm.create, or with
 *                    P_EARLY (bool) at once, {"task":N}, the task then
 *                    in phase "read" and failing as the call would.  With
 *                    P_INCOMING (bool: a migration's receiving end), also
 *                    P_FDS' "reply" (open for writing): the answers to
 *                    the sender (vmbuild-stream(5) status records)
 *   vm.migrate_send  P_VM (required), P_FDS ({"send":I,"recv":J},
 *                    required: the stream to the receiver, its answers
 *                    back), P_LIVE (bool: pre-copy rounds), P_MAX_ROUNDS
 *                    (live rounds before the guest is paused, 1..100,
 *                    default 10), P_DIRTY_PAGES (pause once a round left
 *                    at most this many pages dirty, default 256), P_WAIT,
 *                    P_TARGET ({"host","command"}: the receiving host and
 *                    the sh command line that runs `vmctl
 *                    migrate-receive` there; recorded with the migration,
 *                    so that a daemon killed in it asks, at its next
 *                    start, with " --query NAME" appended, as the caller);
 *                    result {"task","vm","rounds","pages","bytes",
 *                    "downtime_ms","total_s"}
 *   events.subscribe P_EVENTS (list of event names; default: all)
 *   host.scrub, host.info, host.counters, vm.list, task.list,
 *   server.hello     none
 */
#define P_VM			"vm"
#define P_TASK			"task"
#define P_CONFIG		"config"
#define P_CONFIG_PATH		"config_path"
#define P_GUEST			"guest"
#define P_WAIT			"wait"
#define P_PAUSED		"paused"
#define P_EVENTS		"events"
#define P_IGNORE_UNSUPPORTED	"ignore_unsupported"
#define P_DISK			"disk"
#define P_VIF			"vif"
#define P_TIMEOUT		"timeout"
#define P_FORCE			"force"
#define P_FDS			"fds"
#define P_WEIGHT		"weight"
#define P_CAP			"cap"
#define P_NAME_NEW		"new_name"
#define P_CLEAR			"clear"
#define P_MEMORY_BYTES		"memory_bytes"
#define P_MAXMEM_BYTES		"maxmem_bytes"
#define P_VCPUS			"vcpus"
#define P_VCPU			"vcpu"
#define P_HARD			"hard"
#define P_SOFT			"soft"
#define P_IMAGE_ERRORS		"image_errors"
#define P_CHECKPOINT		"checkpoint"
#define P_INCOMING		"incoming"
#define P_EARLY			"early"
#define P_LIVE			"live"
#define P_MAX_ROUNDS		"max_rounds"
#define P_DIRTY_PAGES		"dirty_pages"
#define P_TARGET		"target"

/* Events (notifications). */
#define E_TASK_PROGRESS		"task.progress"
#define E_TASK_DONE		"task.done"
#define E_VM_STATE		"vm.state"
#define E_SCRUB_PROGRESS	"scrub.progress"
#define E_VM_CHANGED		"vm.changed"	/* a setting of a VM changed */

/* JSON-RPC standard codes. */
#define RPC_PARSE_ERROR		-32700
#define RPC_INVALID_REQUEST	-32600
#define RPC_METHOD_NOT_FOUND	-32601
#define RPC_INVALID_PARAMS	-32602
#define RPC_INTERNAL_ERROR	-32603

/* Application codes; data.errno carries the errno where there is one. */
#define E_PERMISSION		1000	/* peer may not call this method */
#define E_NO_SUCH_VM		1001
#define E_NO_SUCH_TASK		1002
#define E_CONFIG		1003	/* data.errors: ["file:line: key: msg", ...] */
#define E_NO_MEMORY		1004	/* the host cannot hold the guest */
#define E_HYPERVISOR		1005	/* the hypervisor refused or failed */
#define E_BUSY			1006	/* a limit was reached (tasks, connections) */
#define E_CANCELLED		1007	/* the task was cancelled */
#define E_EXISTS		1008	/* a VM of that name exists */
#define E_UNAVAILABLE		1009	/* the hypervisor does not report this */
#define E_REQUEST_TOO_LARGE	1010
#define E_TASK_FINISHED		1011	/* cancel of a task that has ended */
#define E_BAD_STATE		1012	/* e.g. pause of a paused VM */
#define E_IMAGE			1013	/* kernel/ramdisk unusable (type, format, size) */
#define E_IMAGE_FD		1014	/* pass these files as descriptors: data.files */
#define E_TIMEOUT		1015	/* the guest did not do it in time */
#define E_NO_SUCH_DEVICE	1016	/* detach of a disk or vif the VM lacks */
#define E_STREAM		1017	/* a save stream is truncated, corrupt or not one */
#define E_MIGRATE		1018	/* a migration failed: the guest stays here */
#define E_MIGRATE_DOUBT		1019	/* the receiver's answer was lost: paused here */

/* vmctl exit codes. */
#define VMCTL_EXIT_OK		0
#define VMCTL_EXIT_ERROR	1	/* the daemon reported an error */
#define VMCTL_EXIT_USAGE	2
#define VMCTL_EXIT_UNREACHABLE	3	/* cannot reach the daemon */

#endif /* VMBUILD_PROTO_H */
