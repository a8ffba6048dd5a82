# -*- coding: utf-8 -*-
# Copyright: vmbuild maintainers
# vmbuild has no license chosen yet (debian/copyright).
"""What the modules of vmbuild.xen share: the vmbuild Python client
(python3-vmbuild) imported when present, its errors turned into
fail_json results, and vmctl run here or on another host over ssh."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import shlex

from ansible.module_utils.basic import missing_required_lib

try:
    import vmbuild
    HAS_VMBUILD = True
except ImportError:
    vmbuild = None
    HAS_VMBUILD = False

# The common options: the daemon's socket and the bound of a reply.
SOCKET_SPEC = dict(socket=dict(type="path"))


def client(module, timeout=30):
    """A vmbuild.Client on the module's socket, or fail_json saying that
    the client library is missing on the managed host."""
    if not HAS_VMBUILD:
        module.fail_json(msg=missing_required_lib("vmbuild (python3-vmbuild)"))
    return vmbuild.Client(module.params["socket"], timeout=timeout)


def fail_daemon(module, e, **kw):
    """fail_json with what a DaemonError carries: its code, the failed
    phase and each configuration error as {file, line, key, message}."""
    res = dict(kw, code=e.code, phase=e.phase)
    if e.errors:
        res["errors"] = [{"file": d.file, "line": d.line, "key": d.key,
                          "message": d.message} for d in e.errors]
        msg = "%s: %s" % (e.message, "; ".join(str(d) for d in e.errors))
    else:
        msg = "%s (code %d)" % (e.message, e.code)
    module.fail_json(msg=msg, **res)


def run_guarded(module, func, *args):
    """func(*args), a vmbuild error failing the task with its details."""
    try:
        return func(*args)
    except vmbuild.DaemonError as e:
        fail_daemon(module, e)
    except vmbuild.VmbuildError as e:
        module.fail_json(msg=str(e))


def remote_command(ssh_command, target, argv):
    """The /bin/sh command line that runs argv on `target` as vmctl
    migrate runs its receiver: ssh_command unquoted (it may carry
    options), the destination and every argument quoted."""
    return "exec %s %s %s" % (ssh_command, shlex.quote(target),
                              " ".join(shlex.quote(a) for a in argv))


def remote_vm_names(module, ssh_command, target, remote_socket):
    """The names of the VMs vmbuildd on `target` holds (vmctl --json
    list over ssh), or fail_json when it cannot be asked."""
    argv = ["vmctl"]
    if remote_socket:
        argv += ["--socket", remote_socket]
    argv += ["--json", "list"]
    line = remote_command(ssh_command, target, argv)
    rc, out, err = module.run_command(["/bin/sh", "-c", line])
    if rc != 0:
        module.fail_json(msg="cannot list the VMs on %s (%s): exit %d: %s" %
                         (target, line, rc, err.strip()), rc=rc)
    try:
        return [v["name"] for v in json.loads(out)["vms"]]
    except (ValueError, KeyError, TypeError) as e:
        module.fail_json(msg="%s: vmctl --json list answered what is not "
                         "a VM list (%s): %r" % (target, e, out[:200]))
