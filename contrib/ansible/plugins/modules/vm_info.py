#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: vmbuild maintainers
# vmbuild has no license chosen yet (debian/copyright).
"""Ansible module vmbuild.xen.vm_info: the VMs of a host and its memory."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vm_info
short_description: The VMs vmbuildd holds on a host, and the host's memory
description:
  - Lists the VMs of vmbuildd on the managed host (vm.list) and what the
    host has (host.info, its free memory among others), through the
    control socket (the vmbuild Python client, package python3-vmbuild).
  - With I(name), that VM's details (vm.info) too.
  - Changes nothing; the read-only socket is enough.
version_added: 0.1.0
options:
  name:
    description:
      - A VM whose details to return in I(vm); the task fails when it does
        not exist.
    type: str
  socket:
    description:
      - vmbuildd's control socket. Default $VMBUILD_SOCKET, else
        /run/vmbuild/control.sock.
    type: path
requirements:
  - python3-vmbuild (the vmbuild Python client) on the managed host
seealso:
  - module: vmbuild.xen.vm
notes:
  - Supports check mode (it changes nothing either way).
author: vmbuild maintainers (@vmbuild)
"""

EXAMPLES = r"""
- name: What xen1 runs
  vmbuild.xen.vm_info:
  register: xen1

- name: Its VMs by name
  ansible.builtin.debug:
    msg: "{{ xen1.vms | map(attribute='name') | list }}"

- name: Free memory in MiB
  ansible.builtin.debug:
    msg: "{{ (xen1.host.free_bytes / 1048576) | int }}"
"""

RETURN = r"""
vms:
  description: The VMs (vm.list), each with id, name, state, memory_bytes, vcpus and nodes.
  returned: always
  type: list
  elements: dict
  sample: [{"id": 1, "name": "web1", "state": "running", "memory_bytes": 67108864, "vcpus": 1}]
host:
  description: The host as host.info describes it (backend, nodes, total_bytes, free_bytes...).
  returned: always
  type: dict
  sample: {"backend": "xen", "nr_nodes": 2, "total_bytes": 274877906944, "free_bytes": 137438953472}
vm:
  description: The VM named by I(name), as vm.info returns it.
  returned: when name is given
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.vmbuild.xen.plugins.module_utils.client import (
    SOCKET_SPEC, client, run_guarded)


def gather(module, cl):
    res = dict(changed=False, vms=cl.vm_list()["vms"], host=cl.host_info())
    if module.params["name"] is not None:
        res["vm"] = cl.vm_info(module.params["name"])
    module.exit_json(**res)


def main():
    spec = dict(name=dict(type="str"))
    spec.update(SOCKET_SPEC)
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    cl = client(module)
    try:
        run_guarded(module, gather, module, cl)
    finally:
        cl.close()


if __name__ == "__main__":
    main()
