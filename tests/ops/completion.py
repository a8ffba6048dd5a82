#!/usr/bin/env python3
"""completion.py - bash completion of vmctl, in bash with bash-completion
loaded, against a live vmbuildd on hvsim.

Commands and options complete from vmctl's --help; VM names come from
the daemon on the socket given with --socket, --socket=, or
$VMBUILD_SOCKET; an unreachable daemon gives no names and no error.
"""
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from vmbdtest import *  # noqa: E402,F401,F403

COMPLETION = os.path.join(TOP, "cli", "vmctl.bash-completion")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
VMCTL = os.path.join(BIN, "vmctl")

if not os.path.exists(BASH_COMPLETION):
    print("ok - vmctl completion # SKIP bash-completion is not installed")
    done()

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M"])
h.start_daemon()
c = h.client()
for name in ("web-1", "web-2", "db"):
    r = c.call("vm.create", {"config": guest_cfg(name, 32), "wait": True})
    if r is None or "result" not in r:
        bail("create %s: %r" % (name, r))
# A disk on db (hvsim records it), for disk-detach's VDEV.
img = os.path.join(h.dir, "data.img")
with open(img, "wb") as f:
    f.truncate(1 << 20)
r = c.call("vm.disk_attach", {"vm": "db", "disk": img + ",raw,xvdb,rw"})
if r is None or "result" not in r:
    bail("disk_attach: %r" % (r,))
c.close()


def complete(line, env=None):
    """COMPREPLY for the command line `line` (completing at its end).

    COMP_WORDS as bash makes them: "=" (in COMP_WORDBREAKS) is a word of
    its own, so "--socket=PATH" is three words.
    """
    words = []
    for w in shlex.split(line):
        words.extend(p for p in re.split("(=)", w) if p)
    if line.endswith(" "):
        words.append("")
    script = "\n".join([
        ". %s" % shlex.quote(BASH_COMPLETION),
        ". %s" % shlex.quote(COMPLETION),
        "COMP_WORDS=(%s)" % " ".join(shlex.quote(w) for w in words),
        "COMP_CWORD=%d" % (len(words) - 1),
        "COMP_LINE=%s" % shlex.quote(line),
        "COMP_POINT=${#COMP_LINE}",
        "_vmctl %s %s %s" % (shlex.quote(words[0]), shlex.quote(words[-1]),
                             shlex.quote(words[-2] if len(words) > 1
                                         else "")),
        'printf "%s\\n" "${COMPREPLY[@]}"',
    ])
    e = dict(os.environ, PATH=BIN + ":" + os.environ["PATH"])
    e.pop("VMBUILD_SOCKET", None)
    e.update(env or {})
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script],
                       capture_output=True, text=True, env=e, cwd=TOP,
                       timeout=60)
    return sorted(w for w in p.stdout.splitlines() if w), p.stderr


def expect(line, want, name, env=None):
    got, err = complete(line, env)
    ok(got == sorted(want), name, "got %r, want %r; stderr %s" %
       (got, sorted(want), err[-500:]))


cmds = subprocess.run([VMCTL, "--help"], capture_output=True,
                      text=True).stdout
cmds = cmds.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
cmds = [ln.split()[0] for ln in cmds.splitlines() if ln.strip()]
# xl's names (issue 19) complete as commands too.
XL = ["block-attach", "block-detach", "network-attach", "network-detach"]
sock = h.sock

expect("vmctl ", cmds + XL, "commands, from vmctl --help (%d), and xl's "
       "names" % len(cmds))
expect("vmctl net", ["net-attach", "net-detach", "network-attach",
                     "network-detach"], "xl's names by their start")
expect("vmctl check --", ["--ignore-unsupported", "--json", "--help"],
       "check's options")
expect("vmctl st", ["stats"], "a command by its start")
expect("vmctl --", ["--socket", "--json", "--timeout", "--help", "--version"],
       "global options")
expect("vmctl --timeout 5 scr", ["scrub"],
       "the command after an option's argument")
expect("vmctl scrub --", ["--wait", "--timeout", "--json", "--help"],
       "a command's options")
expect("vmctl stats --interval ", [], "nothing for an option's argument")
expect("vmctl help ", cmds + XL, "help: commands")
expect("vmctl --socket %s info " % sock, ["db", "web-1", "web-2"],
       "VM names from the daemon (--socket PATH)")
expect("vmctl --socket=%s destroy web" % sock, ["web-1", "web-2"],
       "VM names from the daemon (--socket=PATH), by their start")
expect("vmctl --json pause d", ["db"],
       "VM names through $VMBUILD_SOCKET", {"VMBUILD_SOCKET": sock})
expect("vmctl --socket %s info db " % sock, [],
       "one VM operand, then nothing")
expect("vmctl --socket %s/none info " % h.dir, [],
       "no daemon: no names")
expect("vmctl --socket %s disk-detach db " % sock, ["xvdb"],
       "disk-detach VM: the VM's disks from the daemon")
expect("vmctl --socket %s disk-attach --wait 5 d" % sock, ["db"],
       "disk-attach: VM names first, after an option's argument")
got, err = complete("vmctl disk-attach db configs/h")
ok(got == ["configs/hello.cfg"] and not err.strip(),
   "disk-attach VM: files", (got, err))
got, err = complete("vmctl check configs/h")
ok(got == ["configs/hello.cfg"] and not err.strip(),
   "check: files", (got, err))
got, err = complete("vmctl create configs/h")
ok(got == ["configs/hello.cfg"] and not err.strip(),
   "create: files", (got, err))
expect("vmctl migrate --", ["--live", "--ssh-command", "--remote-socket",
                            "--max-rounds", "--json", "--help"],
       "migrate's options")
expect("vmctl --socket %s migrate --live w" % sock, ["web-1", "web-2"],
       "migrate: VM names first")
with open(os.path.join(h.dir, "hosts"), "w") as f:
    f.write("127.0.0.1 localhost-mig\n")
got, err = complete("vmctl --socket %s migrate web-1 localhost-m" % sock,
                    {"COMP_KNOWN_HOSTS_WITH_HOSTFILE": "1", "HOSTFILE":
                     os.path.join(h.dir, "hosts")})
ok(got == ["localhost-mig"] and not err.strip(), "migrate VM: a host name",
   (got, err))
done()
