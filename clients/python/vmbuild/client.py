"""vmbuild.Client: one method per JSON-RPC method of vmbuildd, the dots
of the method name as underscores (vm.list -> vm_list).  Results are the
daemon's, as dicts (shapes in daemon/README.md); errors are raised as
DaemonError subclasses (vmbuild.errors).
"""
import os
import time

from .connection import Connection
from .errors import ImageDescriptors, Timeout, error_from_reply
from .events import Subscription

# Interval of task.get while following a task whose events are quiet
# (as vmctl's FOLLOW_POLL_MS).
FOLLOW_POLL = 1.0
FINISHED = ("done", "failed", "cancelled")


def _params(**kw):
    """The parameters that were given (None means not given)."""
    return {k: v for k, v in kw.items() if v is not None}


def _open_image(path):
    """A kernel or ramdisk opened with the caller's rights, as vmctl
    opens it: links resolved, without blocking, a regular file only."""
    fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_CLOEXEC |
                 os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY)
    if not os.path.isfile("/proc/self/fd/%d" % fd):
        os.close(fd)
        raise OSError(22, "not a regular file", path)
    return fd


def _vm_ref(vm):
    if isinstance(vm, bool) or not isinstance(vm, (str, int)):
        raise TypeError("vm must be a name (str) or a domain id (int), "
                        "not %r" % (vm,))
    return vm


class Client:
    """A client of vmbuildd's control socket.

    socket_path defaults to $VMBUILD_SOCKET, else /run/vmbuild/control.sock;
    timeout bounds the wait for any one reply (seconds).  The connection
    opens at the first call and reopens after it was lost.  A Client is
    not thread-safe: use one per thread.
    """

    def __init__(self, socket_path=None, timeout=30.0):
        self._conn = Connection(socket_path, timeout)
        self.socket_path = self._conn.path
        self.timeout = timeout

    def close(self):
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def call(self, method, params=None, fds=()):
        """Any method by its JSON-RPC name; returns its result.  fds:
        descriptors sent with the request (params names them)."""
        return self._conn.call(method, params, fds)

    def _create(self, params):
        """vm.create; when the daemon asks for the kernel and ramdisk as
        descriptors (error 1014: they are outside its image
        directories), open them here, with the caller's rights, and
        send the request again with them."""
        try:
            return self.call("vm.create", params)
        except ImageDescriptors as e:
            files = e.data.get("files")
            if not isinstance(files, list):
                raise
            fds, names = [], {}
            try:
                for f in files:
                    if not isinstance(f, dict) or \
                            f.get("key") not in ("kernel", "ramdisk"):
                        continue
                    names[f["key"]] = len(fds)
                    fds.append(_open_image(str(f.get("path"))))
                return self.call("vm.create", dict(params, fds=names), fds)
            finally:
                for fd in fds:
                    os.close(fd)

    # --- server and host ----------------------------------------------

    def server_hello(self):
        """Version, backend, capabilities, methods, limits, the peer."""
        return self.call("server.hello")

    def host_info(self):
        """Topology and memory per node."""
        return self.call("host.info")

    def host_scrub(self):
        """Scrub progress per node: {"nodes": [...]}."""
        return self.call("host.scrub")

    def host_counters(self):
        """TLB-flush, unshadow, populate and scrub counters."""
        return self.call("host.counters")

    # --- VMs -------------------------------------------------------------

    def vm_create(self, config=None, config_path=None, guest=None,
                  wait=False, paused=None, progress=None, timeout=None,
                  ignore_unsupported=None):
        """Create a VM from xl.cfg text (config, with config_path naming
        the file it came from: relative kernel paths and messages) or a
        guest description (guest: a dict with xl.cfg key names).

        wait=False returns {"task", "vm", "uuid"} at once.  wait=True,
        or a progress callback, returns {"task": <task>, "vm": <vm.info>}
        once the build is done; progress(params) is called with each
        task.progress notification's params ({"task", "kind", "vm",
        "progress": {"done", "total", "unit", "phase",
        "rate_bytes_per_second", "scrub"}}, as daemon/README.md says:
        the rate the daemon measured, and the dirty memory a build waits
        for or scrubs inline).  timeout bounds
        that wait (seconds; None: no bound).  A failed build raises the
        task's error (e.g. NoMemory, with .phase and .task).
        ignore_unsupported=True builds without the xl keys vmbuild does
        not implement (sdl, vnc, pci, ...) instead of refusing them; the
        result's "warnings" lists each ("file:line: key: warning: ...").
        """
        params = _params(config=config, config_path=config_path,
                         guest=guest, paused=paused,
                         ignore_unsupported=ignore_unsupported)
        if progress is None:
            params["wait"] = bool(wait)
            r = self._create(params)
            if wait and isinstance(r, dict) and isinstance(r.get("task"), int):
                # The daemon's reply names the task; give the task itself,
                # as the progress path does.
                r = dict(r, task=self.task_get(r["task"]))
            return r
        params["wait"] = False
        # Subscribe before creating, so that no progress is missed.
        with Subscription(self.socket_path, ("task.progress", "task.done"),
                          self.timeout) as sub:
            created = self._create(params)
            task = self._follow(sub, created["task"], progress, timeout)
        vm = task.get("domid")
        return {"task": task, "vm": self.vm_info(task["vm"] if vm is None
                                                 else vm)}

    def vm_create_file(self, path, **kw):
        """vm_create() with the text of the xl.cfg file at `path` (read
        here, by the caller's rights) and its absolute path."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        return self.vm_create(config=text, config_path=os.path.abspath(path),
                              **kw)

    def vm_list(self):
        """{"vms": [{"id", "name", "state", "type", "memory_bytes",
        "vcpus", "nodes"}]}."""
        return self.call("vm.list")

    def vm_info(self, vm):
        """One VM by name or domain id."""
        return self.call("vm.info", {"vm": _vm_ref(vm)})

    def vm_destroy(self, vm):
        return self.call("vm.destroy", {"vm": _vm_ref(vm)})

    def vm_pause(self, vm):
        return self.call("vm.pause", {"vm": _vm_ref(vm)})

    def vm_unpause(self, vm):
        return self.call("vm.unpause", {"vm": _vm_ref(vm)})

    def config_check(self, config, config_path=None):
        """vm.create's dry run: {"ok", "errors", "warnings", "config",
        "placement"}; changes nothing.  Images named by path are read
        by the daemon only from its image directories."""
        return self.call("config.check", _params(config=config,
                                                 config_path=config_path))

    # --- a running VM's memory, vCPUs and settings ------------------------

    def vm_mem_set(self, vm, memory_bytes):
        """The balloon target (a multiple of 4 KiB, up to maxmem)."""
        return self.call("vm.mem_set", {"vm": _vm_ref(vm),
                                        "memory_bytes": memory_bytes})

    def vm_mem_max(self, vm, maxmem_bytes):
        """The most memory the guest may balloon up to."""
        return self.call("vm.mem_max", {"vm": _vm_ref(vm),
                                        "maxmem_bytes": maxmem_bytes})

    def vm_vcpu_set(self, vm, vcpus):
        """vCPUs online, 1..maxvcpus."""
        return self.call("vm.vcpu_set", {"vm": _vm_ref(vm), "vcpus": vcpus})

    def vm_vcpu_pin(self, vm, vcpu, hard, soft=None):
        """Affinity of a vCPU (a number or "all"): CPU lists in xl's
        syntax ("0-3,^2", "nodes:1", "all"); "-" leaves one as it is."""
        return self.call("vm.vcpu_pin", _params(vm=_vm_ref(vm), vcpu=vcpu,
                                                hard=hard, soft=soft))

    def vm_vcpu_list(self, vm):
        """Per vCPU: online, CPU, state, hard and soft affinity."""
        return self.call("vm.vcpu_list", {"vm": _vm_ref(vm)})

    def vm_sched_get(self, vm):
        """The scheduler's weight and cap of a VM."""
        return self.call("vm.sched_get", {"vm": _vm_ref(vm)})

    def vm_sched_set(self, vm, weight=None, cap=None):
        """Weight (1..65535) and/or cap (percent of a CPU, 0: none)."""
        return self.call("vm.sched_set", _params(vm=_vm_ref(vm),
                                                 weight=weight, cap=cap))

    def vm_rename(self, vm, new_name):
        return self.call("vm.rename", {"vm": _vm_ref(vm),
                                       "new_name": new_name})

    def vm_uptime(self, vm=None):
        """One VM's uptime, or every VM's with a domain."""
        return self.call("vm.uptime", _params(vm=_vm_ref(vm)
                                              if vm is not None else None))

    def host_dmesg(self, clear=None):
        """The hypervisor's console ring (control socket only)."""
        return self.call("host.dmesg", _params(clear=clear))

    # --- devices (hot-plug) ----------------------------------------------

    def vm_disk_attach(self, vm, disk, timeout=None):
        """Attach a disk (xl's disk syntax, absolute target) to a running
        VM; timeout: seconds the guest has to connect it (daemon default
        30, 0: no wait).  The daemon attaches only an image the caller
        may open.  {"vm", "id", "disk", "devid", "state",
        "recorded_only"}."""
        return self.call("vm.disk_attach", _params(vm=_vm_ref(vm), disk=disk,
                                                   timeout=timeout))

    def vm_disk_detach(self, vm, disk, force=None):
        """Detach a disk by vdev ("xvdb") or vbd number."""
        return self.call("vm.disk_detach", _params(vm=_vm_ref(vm), disk=disk,
                                                   force=force))

    def vm_net_attach(self, vm, vif="", timeout=None):
        """Attach a vif (xl's vif syntax; "" for the defaults)."""
        return self.call("vm.net_attach", _params(vm=_vm_ref(vm), vif=vif,
                                                  timeout=timeout))

    def vm_net_detach(self, vm, vif, force=None):
        """Detach a vif by devid or MAC."""
        return self.call("vm.net_detach", _params(vm=_vm_ref(vm), vif=vif,
                                                  force=force))

    def _shutdown(self, method, vm, wait, timeout, force):
        params = _params(vm=_vm_ref(vm), wait=wait, timeout=timeout,
                         force=force)
        # Answered when the guest has done it: wait that long, and for
        # a restart's build.
        slack = None
        if wait or force:
            slack = (timeout or 60) + 60 + (600 if method == "vm.reboot"
                                            else 0)
        return self._conn.call(method, params, timeout=slack)

    def vm_shutdown(self, vm, wait=None, timeout=None, force=None):
        """Ask the guest to power off, as xl shutdown: through its PV
        control node, if it announced control/feature-poweroff (else
        Unavailable).  wait=True returns when it has shut down and its
        on_poweroff action is done: {"vm", "id", "request", "forced",
        "state", "reason", "action", "new_id", "seconds"}; a guest that
        does not answer within timeout (s, default 60) raises
        GuestTimeout and is left running.  force=True shuts it down
        from the hypervisor instead, with the same reason."""
        return self._shutdown("vm.shutdown", vm, wait, timeout, force)

    def vm_reboot(self, vm, wait=None, timeout=None, force=None):
        """As vm_shutdown, for a reboot (control/feature-reboot; the
        on_reboot action, by default a restart: "new_id" is the new
        domain)."""
        return self._shutdown("vm.reboot", vm, wait, timeout, force)

    def vm_console(self, vm):
        """The guest's PV console: (result, fd), result {"vm", "id",
        "tty"} and fd the pty's descriptor, passed by the daemon, the
        caller's to read, write and close (os.close).  One client at a
        time per VM: the console is free again when this Client's
        connection closes.  Unavailable where guests have no console
        (hvsim runs no guest code)."""
        r = self.call("vm.console", {"vm": _vm_ref(vm)})
        fd = self._conn.take_fd()
        if fd is None:
            from .errors import ProtocolError
            raise ProtocolError("vm.console: no descriptor with the reply")
        return r, fd

    # --- save and restore ------------------------------------------------

    def vm_save(self, vm, path, checkpoint=False, wait=True, progress=None,
                timeout=None):
        """Save VM `vm` to the file `path` (vmbuild-stream(5)): opened
        here, with this process's rights, and passed as a descriptor
        (the daemon opens no path a client names).  checkpoint=True
        leaves the guest running.  wait=False returns {"task", "vm"} at
        once; else the finished task (progress as wait_task's).  A save
        that fails or is cancelled raises its error and removes the
        file if this call created it."""
        created = not os.path.exists(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC |
                     (os.O_TRUNC if created or os.path.isfile(path) else 0),
                     0o600)
        try:
            r = self.call("vm.save", {"vm": vm, "checkpoint": checkpoint,
                                      "fds": {"file": 0}}, [fd])
            if not wait:
                return r
            return self.wait_task(r["task"], progress, timeout)
        except Exception:
            if created:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            raise
        finally:
            os.close(fd)

    def vm_restore(self, path, paused=None, wait=True, progress=None,
                   timeout=None):
        """Build the VM a save stream at `path` describes, its memory
        written back (opened here and passed as a descriptor).  Returns
        the finished task (wait=True) or {"task", "vm", "uuid"}."""
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            r = self.call("vm.restore", _params(paused=paused,
                                                fds={"file": 0}), [fd])
        finally:
            os.close(fd)
        if not wait:
            return r
        return self.wait_task(r["task"], progress, timeout)

    def vm_migrate_send(self, vm, host, live=False, ssh_command="ssh",
                        remote_socket=None, max_rounds=None, wait=True,
                        progress=None, timeout=None):
        """Migrate VM `vm` to `host` as vmctl migrate does: run
        `ssh_command host vmctl [--socket S] migrate-receive` (through
        /bin/sh) and pass its stdin and stdout to the daemon
        (vm.migrate_send).  Returns the finished task, its "migration"
        figures (rounds, pages, bytes, downtime_ms, total_s) in it, or
        {"task", "vm"} with wait=False (the child is then the caller's
        to reap: it is returned as r["child"]).  The outcome-unknown
        case (error code E_MIGRATE_DOUBT) is left to the caller, who
        asks host (vmctl migrate-receive --query VM)."""
        import shlex
        import subprocess
        rune = "exec %s %s vmctl%s migrate-receive" % (
            ssh_command, shlex.quote(host),
            " --socket " + shlex.quote(remote_socket) if remote_socket
            else "")
        child = subprocess.Popen(["/bin/sh", "-c", rune],
                                 stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE)
        try:
            r = self.call("vm.migrate_send", _params(
                vm=vm, live=live, max_rounds=max_rounds,
                fds={"send": 0, "recv": 1}),
                [child.stdin.fileno(), child.stdout.fileno()])
        except Exception:
            child.kill()
            child.wait()
            raise
        finally:
            # The daemon has them: ours would keep the pipes open.
            child.stdin.close()
            child.stdout.close()
        if not wait:
            r["child"] = child
            return r
        try:
            return self.wait_task(r["task"], progress, timeout)
        finally:
            child.wait()

    def migrate_receive(self, infd=0, outfd=1, wait=True, progress=None,
                        timeout=None):
        """The receiving end (vmctl migrate-receive): the stream read
        from `infd`, the answers written to `outfd`, both passed to the
        daemon (vm.restore, incoming).  Nothing else may write to
        `outfd`.  Returns the finished task or {"task", "vm", "uuid"}."""
        r = self.call("vm.restore", {"incoming": True,
                                     "fds": {"file": 0, "reply": 1}},
                      [infd, outfd])
        if not wait:
            return r
        return self.wait_task(r["task"], progress, timeout)

    # --- tasks -----------------------------------------------------------

    def task_list(self):
        """{"tasks": [...]}: running and recently finished tasks."""
        return self.call("task.list")

    def task_get(self, task):
        return self.call("task.get", {"task": int(task)})

    def task_cancel(self, task):
        return self.call("task.cancel", {"task": int(task)})

    def wait_task(self, task, progress=None, timeout=None):
        """Wait until task `task` (an id) ends and return it.

        progress(params) is called for each of its task.progress
        notifications.  A task that failed or was cancelled raises its
        error (DaemonError subclass, .task set, .phase the phase it was
        in).  timeout: seconds, None for no bound (raises Timeout).
        """
        with Subscription(self.socket_path, ("task.progress", "task.done"),
                          self.timeout) as sub:
            return self._follow(sub, int(task), progress, timeout)

    def _follow(self, sub, task_id, progress, timeout):
        end = None if timeout is None else time.monotonic() + timeout
        task = sub.call("task.get", {"task": task_id})
        while task.get("state") not in FINISHED:
            wait = FOLLOW_POLL
            if end is not None:
                wait = min(wait, end - time.monotonic())
                if wait <= 0:
                    raise Timeout("task %d did not end within %g s" %
                                  (task_id, timeout))
            ev = sub.next_event(timeout=wait)
            if ev is None:
                task = sub.call("task.get", {"task": task_id})
                continue
            if ev.params.get("task") != task_id and \
                    ev.params.get("id") != task_id:
                continue
            if ev.name == "task.progress":
                if progress is not None:
                    progress(ev.params)
            elif ev.name == "task.done":
                task = ev.params
        if task["state"] == "done":
            return task
        error = task.get("error") or {"code": 1007 if task["state"] ==
                                      "cancelled" else -32603,
                                      "message": "task %s" % task["state"]}
        data = {"phase": error.get("phase")}
        if error.get("errno"):
            data["errno"] = error["errno"]
        raise error_from_reply(dict(error, data=data), "vm.create", task)

    # --- events ----------------------------------------------------------

    def events_subscribe(self, events=None):
        """A Subscription (iterator of Event(name, params)) on a
        connection of its own; events: names to receive, default all."""
        return Subscription(self.socket_path, events, self.timeout)

