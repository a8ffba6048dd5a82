#!/usr/bin/python3
"""Ansible module vmbuild_vm: a VM of vmbuildd present or absent."""

DOCUMENTATION = r"""
---
module: vmbuild_vm
short_description: Ensure a vmbuild VM is present or absent
description:
  - Builds a VM with vmbuildd from an xl.cfg file on the managed host, or
    destroys it, through vmbuildd's control socket (the vmbuild Python
    client, package python3-vmbuild).
  - Idempotent by VM name. A VM that exists is left alone; when its memory
    or vCPUs differ from the file, the module warns (vmbuild does not
    resize a VM; destroy and build it again to apply a change).
  - Building needs root or group vmbuild on the managed host.
options:
  name:
    description:
      - The VM's name. Defaults to the name set in I(config); when both are
        given they must be equal.
    type: str
  state:
    description: Whether the VM should exist.
    type: str
    choices: [present, absent]
    default: present
  config:
    description:
      - Path of the xl.cfg file on the managed host (see vmbuild.cfg(5)).
        Required for I(state=present).
    type: path
  paused:
    description: Leave a newly built VM paused.
    type: bool
    default: false
  socket:
    description:
      - vmbuildd's control socket. Default $VMBUILD_SOCKET, else
        /run/vmbuild/control.sock.
    type: path
  timeout:
    description: Seconds to wait for a build to end.
    type: int
    default: 600
requirements:
  - python3-vmbuild (the vmbuild Python client) on the managed host
author: vmbuild maintainers
"""

EXAMPLES = r"""
- name: A VM from its config file
  vmbuild_vm:
    config: /etc/xen/web1.cfg

- name: No VM named scratch
  vmbuild_vm:
    name: scratch
    state: absent
"""

RETURN = r"""
vm:
  description: The VM as vm.info returns it (absent when it does not exist).
  returned: when state=present
  type: dict
task:
  description: The build task (timings, phases), when the module built the VM.
  returned: when a VM was built
  type: dict
errors:
  description: Configuration errors, each with file, line, key and message.
  returned: on a configuration error
  type: list
code:
  description: vmbuildd's error code, when the daemon refused.
  returned: on failure
  type: int
phase:
  description: The build phase that failed (place, create, claim, populate, load, boot).
  returned: when a build failed
  type: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    import vmbuild
    HAS_VMBUILD = True
except ImportError:
    HAS_VMBUILD = False

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


def fail_daemon(module, e, **kw):
    """fail_json with what a DaemonError carries."""
    res = dict(kw, code=e.code, phase=e.phase)
    if e.errors:
        res["errors"] = [{"file": d.file, "line": d.line, "key": d.key,
                          "message": d.message} for d in e.errors]
        msg = "%s: %s" % (e.message, "; ".join(str(d) for d in e.errors))
    else:
        msg = "%s (code %d)" % (e.message, e.code)
    module.fail_json(msg=msg, **res)


def existing(client, name):
    try:
        return client.vm_info(name)
    except vmbuild.NoSuchVM:
        return None


def ensure_present(module, client, name, text, path):
    settings = read_settings(text)
    if name is None:
        name = settings.get("name")
        if not name:
            module.fail_json(msg="%s: no name = \"...\" line; give the "
                             "module a name" % path)
    elif settings.get("name") is not None and settings["name"] != name:
        module.fail_json(msg="%s names the VM %r, the task %r" %
                         (path, settings["name"], name))
    info = existing(client, name)
    if info is not None:
        for d in drift(settings, info):
            module.warn("VM %s exists and differs from %s: %s; it is left "
                        "as it is" % (name, path, d))
        module.exit_json(changed=False, vm=info)
    if module.check_mode:
        module.exit_json(changed=True, vm={"name": name})
    # The daemon replies when the build has ended; the client's timeout
    # (set from the module's) bounds that wait.
    r = client.vm_create(config=text, config_path=path,
                         paused=module.params["paused"], wait=True)
    module.exit_json(changed=True, vm=r.get("vm"), task=r.get("task"))


def ensure_absent(module, client, name):
    info = existing(client, name)
    if info is None:
        module.exit_json(changed=False)
    if not module.check_mode:
        client.vm_destroy(name)
    module.exit_json(changed=True, vm=info)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str"),
            state=dict(type="str", default="present",
                       choices=["present", "absent"]),
            config=dict(type="path"),
            paused=dict(type="bool", default=False),
            socket=dict(type="path"),
            timeout=dict(type="int", default=600),
        ),
        required_if=[("state", "present", ["config"]),
                     ("state", "absent", ["name"])],
        supports_check_mode=True,
    )
    if not HAS_VMBUILD:
        module.fail_json(msg=missing_required_lib("vmbuild (python3-vmbuild)"))
    p = module.params
    client = vmbuild.Client(p["socket"], timeout=max(30, p["timeout"]))
    try:
        if p["state"] == "absent":
            ensure_absent(module, client, p["name"])
        path = os.path.abspath(p["config"])
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeError) as e:
            module.fail_json(msg="cannot read %s: %s" % (path, e))
        ensure_present(module, client, p["name"], text, path)
    except vmbuild.DaemonError as e:
        fail_daemon(module, e)
    except vmbuild.VmbuildError as e:
        module.fail_json(msg=str(e))
    finally:
        client.close()


if __name__ == "__main__":
    main()
