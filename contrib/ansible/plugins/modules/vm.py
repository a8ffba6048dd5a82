#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: vmbuild maintainers
# vmbuild has no license chosen yet (debian/copyright).
"""Ansible module vmbuild.xen.vm: a VM of vmbuildd present, absent,
saved to a file, restored from one, or migrated to another host."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vm
short_description: Ensure a vmbuild VM is present, absent, saved, restored or migrated
description:
  - Builds a VM with vmbuildd from an xl.cfg file on the managed host,
    destroys it, saves it to a file, restores it from one, or moves it to
    another host, through vmbuildd's control socket (the vmbuild Python
    client, package python3-vmbuild) and, for I(state=migrated), C(vmctl
    migrate).
  - Idempotent by VM name. A VM that exists is left alone by
    I(state=present); when its memory or vCPUs differ from the file, the
    module warns (vmbuild does not resize a VM; destroy and build it again
    to apply a change).
  - I(state=saved) saves a VM of this host to I(file); the VM is then gone
    from this host (unless I(checkpoint)). A VM that is not here while
    I(file) exists counts as saved (C(changed=false)); neither the VM nor
    the file is an error.
  - I(state=restored) builds the VM again from I(file) (same name, uuid and
    devices); a VM of that name already here is left alone.
  - I(state=migrated) moves a VM of this host to I(target), an ssh
    destination (C(vmctl migrate), the stream over ssh, nothing listening
    on the network). A VM that is no longer here but is on I(target) counts
    as migrated (C(changed=false)), so that a play run again after an
    interrupted drain goes on where it stopped. A VM that is on neither
    host, or on both, fails the task and nothing is moved. A migration
    that fails leaves the VM running here (what C(vmctl migrate)
    guarantees); the result's I(vm) shows it.
  - Building, saving, restoring and migrating need root or group vmbuild
    on the managed host; migrating needs ssh from this host to I(target)
    and vmctl there.
version_added: 0.1.0
options:
  name:
    description:
      - The VM's name. Defaults to the name set in I(config); when both are
        given they must be equal. Required unless I(state=present).
    type: str
  state:
    description:
      - What should be true of the VM.
      - C(present) built here, C(absent) not here, C(saved) written to
        I(file) and not running here, C(restored) built here from I(file),
        C(migrated) moved to I(target).
    type: str
    choices: [present, absent, saved, restored, migrated]
    default: present
  config:
    description:
      - Path of the xl.cfg file on the managed host (see vmbuild.cfg(5)).
        Required for I(state=present).
    type: path
  paused:
    description: Leave a newly built or restored VM paused.
    type: bool
    default: false
  file:
    description:
      - Path of the save file on the managed host (vmbuild-stream(5)),
        written with I(state=saved) (mode 0600 when created), read with
        I(state=restored).
    type: path
  checkpoint:
    description:
      - With I(state=saved), leave the VM running after writing I(file).
        A checkpoint is taken at every run (C(changed=true)).
    type: bool
    default: false
  target:
    description:
      - With I(state=migrated), the ssh destination to move the VM to
        (C(host) or C(user@host)); vmctl there runs the receiving end.
    type: str
  live:
    description:
      - With I(state=migrated), pre-copy the memory while the guest runs
        (C(vmctl migrate --live)), pausing it only for the last round.
    type: bool
    default: true
  ssh_command:
    description:
      - The command that reaches I(target), run by /bin/sh as
        C(SSH_COMMAND TARGET vmctl ...), so it may carry options
        (C(ssh -i /root/.ssh/migrate -o BatchMode=yes)).
    type: str
    default: ssh
  remote_socket:
    description:
      - vmbuildd's control socket on I(target), when not its default.
    type: path
  vmctl:
    description:
      - The vmctl program on this host (I(state=migrated)). Default the
        one in C(PATH).
    type: path
  socket:
    description:
      - vmbuildd's control socket. Default $VMBUILD_SOCKET, else
        /run/vmbuild/control.sock.
    type: path
  timeout:
    description: Seconds to wait for a build, save or restore to end.
    type: int
    default: 600
requirements:
  - python3-vmbuild (the vmbuild Python client) on the managed host
  - vmctl with the migrate command on both hosts, for I(state=migrated)
seealso:
  - module: vmbuild.xen.vm_info
notes:
  - Supports check mode; I(state=migrated) still asks I(target) which VMs
    it holds (read only), to say whether the VM would move.
author: vmbuild maintainers (@vmbuild)
"""

EXAMPLES = r"""
- name: A VM from its config file
  vmbuild.xen.vm:
    config: /etc/xen/web1.cfg

- name: No VM named scratch
  vmbuild.xen.vm:
    name: scratch
    state: absent

- name: web1 saved before the reboot
  vmbuild.xen.vm:
    name: web1
    state: saved
    file: /var/lib/vmbuild/save/web1.save

- name: web1 back after it
  vmbuild.xen.vm:
    name: web1
    state: restored
    file: /var/lib/vmbuild/save/web1.save

- name: db moved to xen2, running all along
  vmbuild.xen.vm:
    name: db
    state: migrated
    target: root@xen2.example.net
    ssh_command: ssh -o BatchMode=yes
"""

RETURN = r"""
vm:
  description:
    - The VM as vm.info returns it. For I(state=absent) and I(state=saved)
      the VM as it was before; for a failed migration, where it runs now.
  returned: when the VM exists or existed
  type: dict
  sample: {"name": "web1", "id": 3, "state": "running"}
task:
  description:
    - The daemon's task (timings, phases) of a build, save or restore, or
      C(vmctl --json migrate)'s finished task.
  returned: when the module built, saved, restored or migrated the VM
  type: dict
migration:
  description: The migration's figures (downtime_ms, total_s, pages, rounds).
  returned: when the module migrated the VM and vmctl reported them
  type: dict
  sample: {"downtime_ms": 12, "total_s": 0.8, "pages": 16384, "rounds": 2}
file:
  description: The save file written or read.
  returned: when state=saved or state=restored
  type: str
errors:
  description: Configuration errors, each with file, line, key and message.
  returned: on a configuration error
  type: list
  elements: dict
code:
  description: vmbuildd's error code, when the daemon refused.
  returned: on failure
  type: int
phase:
  description: The build phase that failed (place, create, claim, populate, load, boot).
  returned: when a build failed
  type: str
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.vmbuild.xen.plugins.module_utils.client import (
    SOCKET_SPEC, client, remote_vm_names, run_guarded, vmbuild)

# Settings of an xl.cfg file the module compares with an existing VM:
# plain "key = number" and "key = \"string\"" statements.
_SETTING = re.compile(r'^\s*(name|memory|vcpus)\s*=\s*(?:"([^"]*)"|(\d+))\s*(?:#.*)?$')


def read_settings(text):
    """name, memory (MiB) and vcpus as the file sets them (last wins)."""
    found = {}
    for line in text.splitlines():
        m = _SETTING.match(line)
        if m:
            found[m.group(1)] = m.group(2) if m.group(2) is not None \
                else m.group(3)
    return found


def drift(settings, info):
    """What differs between the file and an existing VM, in words."""
    cfg = info.get("config") or {}
    out = []
    mem = settings.get("memory")
    if mem is not None and mem.isdigit() and \
            cfg.get("memory_bytes") is not None and \
            int(mem) << 20 != cfg["memory_bytes"]:
        out.append("memory %s MiB in the file, %d MiB built" %
                   (mem, cfg["memory_bytes"] >> 20))
    vcpus = settings.get("vcpus")
    if vcpus is not None and vcpus.isdigit() and \
            cfg.get("vcpus") is not None and int(vcpus) != cfg["vcpus"]:
        out.append("vcpus %s in the file, %d built" % (vcpus, cfg["vcpus"]))
    return out


def existing(cl, name):
    try:
        return cl.vm_info(name)
    except vmbuild.NoSuchVM:
        return None


def ensure_present(module, cl):
    p = module.params
    path = os.path.abspath(p["config"])
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeError) as e:
        module.fail_json(msg="cannot read %s: %s" % (path, e))
    settings = read_settings(text)
    name = p["name"]
    if name is None:
        name = settings.get("name")
        if not name:
            module.fail_json(msg="%s: no name = \"...\" line; give the "
                             "module a name" % path)
    elif settings.get("name") is not None and settings["name"] != name:
        module.fail_json(msg="%s names the VM %r, the task %r" %
                         (path, settings["name"], name))
    info = existing(cl, name)
    if info is not None:
        for d in drift(settings, info):
            module.warn("VM %s exists and differs from %s: %s; it is left "
                        "as it is" % (name, path, d))
        module.exit_json(changed=False, vm=info)
    if module.check_mode:
        module.exit_json(changed=True, vm={"name": name})
    # The daemon replies when the build has ended; the client's timeout
    # (set from the module's) bounds that wait.
    r = cl.vm_create(config=text, config_path=path, paused=p["paused"],
                     wait=True)
    module.exit_json(changed=True, vm=r.get("vm"), task=r.get("task"))


def ensure_absent(module, cl):
    info = existing(cl, module.params["name"])
    if info is None:
        module.exit_json(changed=False)
    if not module.check_mode:
        cl.vm_destroy(module.params["name"])
    module.exit_json(changed=True, vm=info)


def ensure_saved(module, cl):
    p = module.params
    name, path = p["name"], os.path.abspath(p["file"])
    info = existing(cl, name)
    if info is None:
        # Saved by an earlier run: the file is there, the VM is not.
        if os.path.isfile(path):
            module.exit_json(changed=False, file=path)
        module.fail_json(msg="VM %s is not on this host and %s does not "
                         "exist: nothing to save" % (name, path))
    if module.check_mode:
        module.exit_json(changed=True, vm=info, file=path)
    task = cl.vm_save(name, path, checkpoint=p["checkpoint"], wait=True,
                      timeout=p["timeout"])
    module.exit_json(changed=True, vm=info, task=task, file=path)


def ensure_restored(module, cl):
    p = module.params
    name, path = p["name"], os.path.abspath(p["file"])
    info = existing(cl, name)
    if info is not None:
        module.exit_json(changed=False, vm=info, file=path)
    if not os.path.isfile(path):
        module.fail_json(msg="VM %s is not on this host and its save file "
                         "%s does not exist" % (name, path))
    if module.check_mode:
        module.exit_json(changed=True, vm={"name": name}, file=path)
    task = cl.vm_restore(path, paused=p["paused"], wait=True,
                         timeout=p["timeout"])
    info = existing(cl, name)
    if info is None:
        module.fail_json(msg="%s held VM %s, not %s; that VM was restored" %
                         (path, task.get("vm"), name), task=task, file=path)
    module.exit_json(changed=True, vm=info, task=task, file=path)


def migrate_argv(module):
    """vmctl --json migrate ... for this task's options."""
    p = module.params
    argv = [module.get_bin_path(p["vmctl"] or "vmctl", required=True)]
    if p["socket"]:
        argv += ["--socket", p["socket"]]
    argv += ["--json", "migrate", "--ssh-command", p["ssh_command"]]
    if p["live"]:
        argv.append("--live")
    if p["remote_socket"]:
        argv += ["--remote-socket", p["remote_socket"]]
    return argv + [p["name"], p["target"]]


def ensure_migrated(module, cl):
    p = module.params
    name, target = p["name"], p["target"]
    info = existing(cl, name)
    there = name in remote_vm_names(module, p["ssh_command"], target,
                                    p["remote_socket"])
    if info is None and there:
        module.exit_json(changed=False, msg="VM %s is on %s" % (name, target))
    if info is None:
        module.fail_json(msg="VM %s is neither on this host nor on %s" %
                         (name, target))
    if there:
        module.fail_json(msg="VM %s is both on this host and on %s; nothing "
                         "is moved (which one is the guest?)" % (name, target),
                         vm=info)
    if module.check_mode:
        module.exit_json(changed=True, vm=info)
    argv = migrate_argv(module)
    rc, out, err = module.run_command(argv)
    if rc != 0:
        # vmctl migrate leaves the guest running here on any failure:
        # say where it is now.
        now = existing(cl, name)
        why = err.strip() or out.strip()
        if rc == 2 and "unknown command" in why:
            why = "%s has no migrate command (vmbuild too old): %s" % \
                (argv[0], why)
        module.fail_json(msg="migrating VM %s to %s failed (exit %d): %s" %
                         (name, target, rc, why), rc=rc, vm=now,
                         cmd=" ".join(argv))
    try:
        task = json.loads(out)
    except ValueError:
        task = {}
    module.exit_json(changed=True, vm=info, task=task,
                     migration=task.get("migration"))


STATES = {
    "present": ensure_present,
    "absent": ensure_absent,
    "saved": ensure_saved,
    "restored": ensure_restored,
    "migrated": ensure_migrated,
}


def main():
    spec = dict(
        name=dict(type="str"),
        state=dict(type="str", default="present", choices=list(STATES)),
        config=dict(type="path"),
        paused=dict(type="bool", default=False),
        file=dict(type="path"),
        checkpoint=dict(type="bool", default=False),
        target=dict(type="str"),
        live=dict(type="bool", default=True),
        ssh_command=dict(type="str", default="ssh"),
        remote_socket=dict(type="path"),
        vmctl=dict(type="path"),
        timeout=dict(type="int", default=600),
    )
    spec.update(SOCKET_SPEC)
    module = AnsibleModule(
        argument_spec=spec,
        required_if=[("state", "present", ["config"]),
                     ("state", "absent", ["name"]),
                     ("state", "saved", ["name", "file"]),
                     ("state", "restored", ["name", "file"]),
                     ("state", "migrated", ["name", "target"])],
        supports_check_mode=True,
    )
    cl = client(module, timeout=max(30, module.params["timeout"]))
    try:
        run_guarded(module, STATES[module.params["state"]], module, cl)
    finally:
        cl.close()


if __name__ == "__main__":
    main()
