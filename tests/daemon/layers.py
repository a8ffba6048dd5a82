#!/usr/bin/env python3
"""layers.py - the daemon reads top-down (issue 18, step 3).

Each daemon/*.c belongs to one layer:

    main -> methods -> tasks -> registry -> rpc/control -> base

and includes only daemon headers of its own layer or below: the
registry (vm.c) calls nothing above it but runs the hooks main.c
subscribes (vm_hook_add); rpc.c is given the method table
(rpc_set_methods); build.c tells lifecycle.c through its configuration.
Checked from the sources (no build needed):

- every daemon/*.c has a layer here (a new file is placed on purpose);
- no file includes the header of a layer above its own;
- no header declares a function defined in a layer above the header's
  (a call back up hidden behind a lower header: vmbuildd.h once
  declared main.c's vmbd_status_changed for the registry and the tasks);
- the files form no include cycle.

`layers.py --graph` prints each file's daemon includes.
"""
import os
import re
import sys

LAYERS = [
    ("main", "main"),
    ("methods", "methods devices console everyday resize check save "
                "migrate migresolve"),
    ("tasks", "build lifecycle reap task events report source reconcile "
              "shutdown images metrics params"),
    ("registry", "vm"),
    ("rpc/control", "rpc control peer"),
    ("base", "json log state guestjson worker notify procstat rate clock cpukeep "
             "proto vmbuildd vmstate status dm"),
]
LAYER = {m: n for n, (_, names) in enumerate(LAYERS) for m in names.split()}
DAEMON = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "..", "..", "daemon")


def graph():
    mods = sorted(f[:-2] for f in os.listdir(DAEMON) if f.endswith(".c"))
    hdrs = {f[:-2] for f in os.listdir(DAEMON) if f.endswith(".h")}
    edges = {}
    for m in mods:
        with open(os.path.join(DAEMON, m + ".c")) as f:
            inc = re.findall(r'^#include "([a-z_]+)\.h"', f.read(), re.M)
        edges[m] = [h for h in inc if h in hdrs and h != m]
    return mods, edges


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def hidden_up():
    """Functions a header declares whose definition is in a file of a
    layer above the header's: each (header, function, file)."""
    defined = {}
    for f in sorted(os.listdir(DAEMON)):
        if f.endswith(".c"):
            with open(os.path.join(DAEMON, f)) as fh:
                text = strip_comments(fh.read())
            for name in re.findall(r"^(?!static\b)[a-z][^;{}()]*\n"
                                   r"([a-z_][a-z0-9_]*)\(", text, re.M):
                defined.setdefault(name, f[:-2])
    out = []
    for f in sorted(os.listdir(DAEMON)):
        if not f.endswith(".h") or f[:-2] not in LAYER:
            continue
        with open(os.path.join(DAEMON, f)) as fh:
            text = strip_comments(fh.read())
        for name in sorted(set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*\(",
                                          text))):
            m = defined.get(name)
            if m and m in LAYER and LAYER[m] < LAYER[f[:-2]]:
                out.append((f, name, m))
    return out


def cycles(edges):
    """Strongly connected sets of more than one file (a header stands
    for its .c), by Tarjan's algorithm."""
    index, low, stack, on, out = {}, {}, [], set(), []
    count = [0]

    def visit(v):
        index[v] = low[v] = count[0]
        count[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, []):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    mods, edges = graph()
    if "--graph" in sys.argv[1:]:
        for m in mods:
            layer = LAYERS[LAYER[m]][0] if m in LAYER else "?"
            print(f"{m}.c [{layer}]: {' '.join(edges[m])}")
        return 0
    fails = 0
    checks = []
    unplaced = [m for m in mods + [h for e in edges.values() for h in e]
                if m not in LAYER]
    checks.append(("every daemon file has a layer",
                   sorted(set(unplaced))))
    up = [f"{m}.c ({LAYERS[LAYER[m]][0]}) includes {h}.h "
          f"({LAYERS[LAYER[h]][0]})"
          for m in mods for h in edges[m]
          if m in LAYER and h in LAYER and LAYER[h] < LAYER[m]]
    checks.append(("no include of a layer above", up))
    checks.append(("no header declares a function of a layer above",
                   [f"{h} ({LAYERS[LAYER[h[:-2]]][0]}) declares {n}, "
                    f"defined in {m}.c ({LAYERS[LAYER[m]][0]})"
                    for h, n, m in hidden_up()]))
    checks.append(("no include cycle",
                   [" <-> ".join(c) for c in cycles(edges)]))
    print(f"1..{len(checks)}")
    for i, (name, bad) in enumerate(checks, 1):
        if bad:
            fails += 1
            print(f"not ok {i} - {name}")
            for b in bad:
                print(f"# {b}")
        else:
            print(f"ok {i} - {name}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
