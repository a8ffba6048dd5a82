#!/bin/bash
# ansible.sh - the Ansible module contrib/ansible/library/vmbuild_vm.py,
# run by Debian's ansible-playbook against localhost (connection local)
# with a live vmbuildd on hvsim.
#
# The playbook asserts each step itself: a VM built from its config file
# (changed), the same again (not changed), a changed file (a warning, not
# changed), check mode (changed reported, nothing built), a configuration
# error (failed, with file, line and key), absent (changed, destroyed),
# absent again (not changed).  This script then checks the recap and what
# the daemon really holds.
. "$(dirname "$0")/../e2e/lib.sh"

if ! command -v ansible-playbook >/dev/null; then
	echo "ok 1 - ansible # SKIP ansible-playbook is not installed"
	exit 0
fi
start_hvsim --nodes 2 --cpus-per-node 2 --threads-per-core 1 \
	--mem-per-node 256M || bail "hvsim did not start"
start_daemon || bail "vmbuildd did not start"

cfg() {	# cfg NAME MEMORY [EXTRA]
	printf 'name = "%s"\ntype = "pvh"\nmemory = %d\nvcpus = 1\nkernel = "%s"\n%s' \
		"$1" "$2" "$GUEST_KERNEL" "${3:-}" >"$RUN/$1.cfg"
}
cfg web1 64
cfg web2 32
printf 'name = "bad"\nmemroy = 64\nkernel = "%s"\n' "$GUEST_KERNEL" >"$RUN/bad.cfg"
cfg grown 64
cat >"$RUN/play.yml" <<EOF
- name: vmbuild_vm on localhost
  hosts: localhost
  connection: local
  gather_facts: false
  environment:
    PYTHONPATH: "$E2E_TOP/clients/python"
  vars:
    sock: "$SOCK"
  tasks:
    - name: build web1
      vmbuild_vm: {config: "$RUN/web1.cfg", socket: "{{ sock }}"}
      register: r
    - assert:
        that: [r is changed, r.vm.name == "web1", r.vm.id is number,
               r.task.state == "done"]

    - name: build web1 again
      vmbuild_vm: {config: "$RUN/web1.cfg", name: web1, socket: "{{ sock }}"}
      register: r
    - assert: {that: [r is not changed, r.vm.name == "web1"]}

    - name: build web2, paused
      vmbuild_vm: {config: "$RUN/web2.cfg", paused: true, socket: "{{ sock }}"}
      register: r
    - assert: {that: [r is changed, r.vm.state == "paused"]}

    - name: web1 grown in its file (memory 128)
      vmbuild_vm: {config: "$RUN/grown.cfg", name: web1, socket: "{{ sock }}"}
      register: r
      ignore_errors: true
    - assert: {that: [r is failed, "'names the VM' in r.msg"]}

    - name: check mode builds nothing
      vmbuild_vm: {config: "$RUN/grown.cfg", socket: "{{ sock }}"}
      check_mode: true
      register: r
    - assert: {that: [r is changed, r.vm.name == "grown"]}

    - name: a configuration error
      vmbuild_vm: {config: "$RUN/bad.cfg", socket: "{{ sock }}"}
      register: r
      ignore_errors: true
    - assert:
        that:
          - r is failed
          - r.code == 1003
          - r.errors[0].file == "$RUN/bad.cfg"
          - r.errors[0].line == 2
          - r.errors[0].key == "memroy"
          - "'unknown key' in r.msg"

    - name: web2 absent
      vmbuild_vm: {name: web2, state: absent, socket: "{{ sock }}"}
      register: r
    - assert: {that: [r is changed, r.vm.name == "web2"]}

    - name: web2 absent again
      vmbuild_vm: {name: web2, state: absent, socket: "{{ sock }}"}
      register: r
    - assert: {that: [r is not changed]}
EOF
# The file of a VM that exists, changed: a warning, nothing done.
sed 's/^memory = 64$/memory = 128/' "$RUN/web1.cfg" >"$RUN/web1-128.cfg"
cat >>"$RUN/play.yml" <<EOF

    - name: web1 with a changed memory size in its file
      vmbuild_vm: {config: "$RUN/web1-128.cfg", socket: "{{ sock }}"}
      register: r
    - assert:
        that:
          - r is not changed
          - r.warnings | select('search', 'memory 128 MiB in the file, 64 MiB built') | list | length == 1
EOF

export ANSIBLE_LIBRARY=$E2E_TOP/contrib/ansible/library
export ANSIBLE_LOCAL_TEMP=$RUN/ansible-local ANSIBLE_REMOTE_TEMP=$RUN/ansible-remote
export ANSIBLE_HOME=$RUN/ansible-home ANSIBLE_NOCOLOR=1
export ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_PYTHON_INTERPRETER=${PYTHON}
export ANSIBLE_INVENTORY_UNPARSED_WARNING=0 ANSIBLE_LOCALHOST_WARNING=0
if ansible-playbook -i localhost, "$RUN/play.yml" >"$RUN/ansible.log" 2>&1; then
	ok "ansible-playbook: every step asserted"
else
	not_ok "ansible-playbook: every step asserted"
	grep -E 'FAILED|fatal|ERROR|msg' "$RUN/ansible.log" | head -20 | sed 's/^/# /'
fi
recap=$(grep -E '^localhost +:' "$RUN/ansible.log")
diag "$recap"
check "recap: 0 failed, 4 changed, 2 errors ignored" \
	grep -qE 'changed=4 .*failed=0 .*ignored=2' <<<"$recap"
names=$("$VMCTL" --json list | "$PYTHON" -c \
	'import json,sys; print(" ".join(sorted(v["name"] for v in json.load(sys.stdin)["vms"])))')
check "the daemon holds web1 only (\"$names\")" test "$names" = web1
mem=$("$VMCTL" --json list | "$PYTHON" -c \
	'import json,sys; print([v["memory_bytes"] for v in json.load(sys.stdin)["vms"]][0] >> 20)')
check "web1 kept its 64 MiB" test "$mem" = 64
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
