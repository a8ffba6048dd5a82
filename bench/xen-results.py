#!/usr/bin/env python3
"""xen-results.py - issue 22's side-by-side figures from the lab's console logs.

  xen-results.py --summary LOG...     print the summary lines (judge.sh)
  xen-results.py [--out FILE.json] [--plot FILE.svg] [--commit C] LOG...
                                      write the results (and the plot)

Each LOG is a lab console log (build/lab/console.log, the companion's
build/lab-companion/numa/console.log) with the records dom0 printed
(tests/lab/xenbench.sh):

  XBENCH create round=K tool=xl|vmb domid=N return=S line=S [kernel_cached=yes|no]
               [dom0_cpu=S dom0_steal=S tool_cpu=S vmbuildd_cpu=S xenstored_cpu=S guest_cpu=S]
                                   (CPU seconds to the line: all of dom0 and
                                   its vCPUs' wait; xl or vmctl with what
                                   they waited for, to the return; vmbuildd
                                   with the hotplug scripts it reaped;
                                   xenstored; the guest's own vCPUs)
  XBENCH create round=K tool=T domid=N dropped=triple-fault
  XBENCH create round=K tool=T failed=WHY
  XBENCH dirty seq=K tool=T domid=N mb=M node=N xen=stock|companion hogs=H filled=F rc=R return=S
               [dom0_cpu=S dom0_steal=S dom0_vcpus=N=S/S,...] [clean=1]
                                   (dom0_cpu: the CPU time all of dom0 used
                                   from the create's start to its return,
                                   dom0_steal: its vCPUs' wait for pCPUs;
                                   /proc/stat, not lengthened by the wait;
                                   dom0_vcpus: both per vCPU, not read here)
                                   (clean=1: vmbuild's first guest, over clean
                                   memory; tool=vmb1cpu: vmbuildd kept to one
                                   dom0 CPU; both the limits, not dirty figures)
  XBSTATS K before|after rc=R {vmctl --json stats}
  XBINFO K {vmctl --json info}     vmbuild's dirty create K: its build's
                                   phases and populate workers (the profile)
  LAB-HOST load_start=L load_end=L cpus=N        (run.sh, after QEMU)

A command's return is the time dom0's `timed` gave its step ("MARK
step=xb-create-T-rK ... secs=S", as the lab's other rows; the record's
own return= adds the printing of the command's output and is the
fallback).  A create's time to its line is dom0's (the PV console has no
timestamps of its own); a dirty create's time to the guest's hello line
is the host's, from
the timestamps run.sh gives every console line: "MARK begin
step=xb-dirty-TAG" to "(dN) ... vmbuild-guest: hello from domain N".

Per tool: the median, min and max of every counted figure; each ratio is
vmbuild's median over xl's (below 1: vmbuild faster).  A dropped round (the
emulated CPU's triple fault) is not counted and is said; a missing figure
leaves its ratio null and is said.  Figures, never a verdict: the lab is
TCG on a shared machine.
"""
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

TS = re.compile(r'^\[ *([0-9]+\.[0-9]+)\] (.*)$')
KV = re.compile(r'([a-z][a-z0-9_]*)=(\S*)')
MARK = re.compile(r'^MARK step=(\S+) rc=([0-9]+) secs=([0-9.]+)')
TOOLS = ('xl', 'vmb')
# Who restores: xl, and vmbuildd with each of its readers of the stream.
RESTORE_MODES = ('xl', 'libxenguest', 'engine')
# The targets, shown beside the figures (not judged here).
TARGETS = {'create_return_ratio': 0.7, 'create_line_ratio': 0.7,
           'dirty_ratio_companion': 0.5, 'dirty_ratio_stock': 1.0,
           'restore_ratio': 0.7}


def lines_of(path):
    """(seconds, text) of each time-stamped line, CRs dropped."""
    out = []
    with open(path, errors='replace') as f:
        for raw in f:
            m = TS.match(raw.replace('\r', '').rstrip('\n'))
            if m:
                out.append((float(m.group(1)), m.group(2)))
    return out


def fnum(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def spread(v):
    """median, min, max of the figures, or None without any."""
    if not v:
        return None
    return {'n': len(v), 'median': round(statistics.median(v), 2),
            'min': min(v), 'max': max(v), 'values': v}


def spreads(raw, keys):
    """spread() of each key over the records that have it."""
    return {k: spread([v[k] for v in raw if v.get(k) is not None])
            for k in keys}


def ratio(a, b):
    if not a or not b or not b['median']:
        return None
    return round(a['median'] / b['median'], 3)


def dig(j, *keys):
    for k in keys:
        if not isinstance(j, dict):
            return None
        j = j.get(k)
    return j


def parse_log(path):
    """The raw records of one log."""
    lines = lines_of(path)
    r = {'log': path, 'creates': [], 'dirty': [], 'stats': {}, 'host': None,
         'restores': [], 'restore_rounds': [], 'info': {}}
    marks = {}
    for ts, text in lines:
        m = MARK.match(text)
        if m and m.group(2) == '0':
            marks[m.group(1)] = fnum(m.group(3))
    for ts, text in lines:
        if text.startswith('XBENCH create '):
            c = dict(KV.findall(text))
            c['return'] = marks.get('xb-create-%s-r%s' % (
                c.get('tool'), c.get('round')), c.get('return'))
            r['creates'].append(c)
        elif text.startswith('XBENCH dirty '):
            d = dict(KV.findall(text))
            d['line'] = hello_time(lines, d)
            d['return'] = marks.get('xb-dirty-xbd%s-%s' % (
                d.get('seq'), d.get('tool')), d.get('return'))
            r['dirty'].append(d)
        elif text.startswith('XBSTATS '):
            w = text.split(' ', 4)
            if len(w) == 5 and w[3] == 'rc=0':
                try:
                    r['stats'][(w[1], w[2])] = json.loads(w[4])
                except ValueError:
                    pass
        elif text.startswith('XBINFO '):
            w = text.split(' ', 2)
            if len(w) == 3:
                try:
                    r['info'][w[1]] = json.loads(w[2])
                except ValueError:
                    pass
        elif text.startswith('vmbuild-saverestore: '):
            r['restores'].append(dict(KV.findall(text)))
        elif text.startswith('vmbuild-saverestore-rounds: '):
            r['restore_rounds'].append(dict(KV.findall(text)))
        elif text.startswith('LAB-HOST '):
            h = dict(KV.findall(text))
            r['host'] = {k: fnum(h.get(k)) for k in
                         ('load_start', 'load_end', 'cpus')}
    return r


def hello_time(lines, d):
    """Seconds from the dirty create's start to its guest's hello line."""
    tag = 'xbd%s-%s' % (d.get('seq'), d.get('tool'))
    begin = next((ts for ts, t in lines
                  if t == 'MARK begin step=xb-dirty-' + tag), None)
    dom = d.get('domid')
    if begin is None or not dom:
        return None
    hello = re.compile(r'^\(d%s\) .*vmbuild-guest: hello from domain %s$'
                       % (dom, dom))
    for ts, t in lines:
        if ts >= begin and hello.match(t):
            return round(ts - begin, 2)
    return None


# A create's CPU to its line, where the record has it (older logs do
# not: not a missing figure).  toolstack_cpu, derived: what the tool
# spent of dom0's, xl with its scripts, vmctl with vmbuildd's work.
CREATE_CPU = ('dom0_cpu', 'dom0_steal', 'tool_cpu', 'vmbuildd_cpu',
              'xenstored_cpu', 'guest_cpu')


def create_cpu(tool, c):
    """The CPU figures of one create record, toolstack_cpu with them."""
    v = {k: fnum(c.get(k)) for k in CREATE_CPU}
    daemon = v['vmbuildd_cpu'] if tool == 'vmb' else 0
    if v['tool_cpu'] is not None and daemon is not None:
        v['toolstack_cpu'] = round(v['tool_cpu'] + daemon, 2)
    return v


def creates(recs):
    """The create rounds of every log: per tool, its return and line times
    (and, where recorded, the CPU each spent to the line)."""
    out = {'rounds': 0, 'dropped': [], 'failed': [], 'missing': [],
           'vmb_kernel_cached': 0, 'vmb_kernel_unpacked': 0}
    vals = {t: {'return': [], 'line': []} for t in TOOLS}
    cpu = {t: [] for t in TOOLS}
    for c in recs:
        tool, rnd = c.get('tool'), c.get('round')
        if tool not in TOOLS:
            continue
        out['rounds'] = max(out['rounds'], int(rnd or 0))
        what = '%s round %s' % (tool, rnd)
        if 'dropped' in c:
            out['dropped'].append('%s (%s)' % (what, c['dropped']))
            continue
        if 'failed' in c:
            out['failed'].append('%s (%s)' % (what, c['failed']))
            continue
        # vmbuildd's cache of unpacked kernels (xl unpacks every time):
        # how many of its rounds found the kernel there, said with
        # the figures.
        if tool == 'vmb' and c.get('kernel_cached') in ('yes', 'no'):
            out['vmb_kernel_' + ('cached' if c['kernel_cached'] == 'yes'
                                 else 'unpacked')] += 1
        for k in ('return', 'line'):
            v = fnum(c.get(k))
            if v is None:
                out['missing'].append('%s %s' % (what, k))
            else:
                vals[tool][k].append(v)
        cpu[tool].append(create_cpu(tool, c))
    for t in TOOLS:
        out[t] = {k: spread(v) for k, v in vals[t].items()}
        cs = spreads(cpu[t], CREATE_CPU + ('toolstack_cpu',))
        if any(cs.values()):
            out[t]['cpu'] = cs
    out['return_ratio'] = ratio(out['vmb']['return'], out['xl']['return'])
    out['line_ratio'] = ratio(out['vmb']['line'], out['xl']['line'])
    return out


def stats_delta(stats, seq, *keys):
    a, b = dig(stats.get((seq, 'before')), *keys), \
        dig(stats.get((seq, 'after')), *keys)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return b - a
    return None


# Where a vmbuild dirty create's time went, from its XBINFO record: the
# build's phases, and populate's workers (the longest is the phase's
# critical path; busy over longest, the parallelism it got; the
# hypervisor's own time in the requests over the workers' wall time,
# in_hypervisor, the share they were not waiting outside it; cpu_wait,
# the share dom0's vCPUs waited for a pCPU before it, and serial, whether
# the engine ran one worker per node for that).
PROFILE = (('create', ('build', 'phases', 'create')),
           ('populate', ('build', 'phases', 'populate')),
           ('boot', ('build', 'phases', 'boot')),
           ('workers', ('build', 'workers')),
           ('worker_longest', ('build', 'worker_profile', 'longest_seconds')),
           ('worker_busy', ('build', 'worker_profile', 'busy_seconds')),
           ('extents_1g', ('build', 'populate', 'extents', '1g')),
           ('extents_split', ('build', 'populate', 'extents_split')),
           ('hypervisor', ('build', 'populate', 'hypervisor_seconds')),
           # dom0's vCPUs' steal over their wanted time before populate,
           # from which the engine chose one worker per node (serial).
           ('cpu_wait', ('build', 'cpu_wait_share')),
           ('serial', ('build', 'workers_serial')),
           # the same share over the seconds before the request, from
           # which vmbuildd kept all its threads on one CPU for it (kept:
           # daemon/cpukeep.c).
           ('before', ('build', 'cpu_wait_share_before')),
           ('kept', ('build', 'cpu_kept')))
DERIVED = ('parallelism', 'in_hypervisor')


def profile(info):
    if not info:
        return None
    p = {k: dig(info, *path) for k, path in PROFILE}
    if isinstance(p['serial'], bool):
        p['serial'] = int(p['serial'])   # a count of such creates' median
    # cpu_kept is the CPU or null (not kept); absent before cpukeep.c.
    build = info.get('build') if isinstance(info, dict) else None
    if isinstance(build, dict) and 'cpu_kept' in build:
        p['kept'] = int(build['cpu_kept'] is not None)
    if p['worker_longest'] and p['worker_busy'] is not None:
        p['parallelism'] = round(p['worker_busy'] / p['worker_longest'], 2)
    # On the building thread alone the workers' times are 0: populate's.
    wall = p['worker_busy'] or p['populate']
    if isinstance(p['hypervisor'], (int, float)) and wall:
        p['in_hypervisor'] = round(p['hypervisor'] / wall, 2)
    return p


def dirty(recs_by_log):
    """Per Xen (stock, companion): each tool's times to the hello line over
    dirty memory, and the pages scrubbed inline and flushes it caused."""
    out = {}
    for r in recs_by_log:
        for d in r['dirty']:
            xen = d.get('xen', 'stock')
            # hogs: guests spinning through it (a busy host, whose idle
            # scrubber does not run); filled: other nodes full (no clean
            # memory elsewhere); absent from logs before them: 0.
            x = out.setdefault(xen, {'mb': fnum(d.get('mb')),
                                     'hogs': fnum(d.get('hogs', '0')),
                                     'filled': fnum(d.get('filled', '0')),
                                     'node': d.get('node'), 'missing': [],
                                     'failed': [], 'dropped': [],
                                     'log': r['log'],
                                     'raw': {t: [] for t in TOOLS}})
            tool = d.get('tool')
            # What bounds vmbuild's figure on this host: its create over
            # clean memory, and with its threads on one CPU (LIMITS).
            lim = next((k for k, t, c in LIMITS if t == tool and
                        c == (d.get('clean') == '1')), None)
            if tool not in TOOLS and lim is None:
                continue
            what = '%s seq %s' % (tool, d.get('seq'))
            if d.get('dropped'):
                # The emulated CPU's triple fault: no figure, said.
                x['dropped'].append('%s (%s)' % (what, d['dropped']))
                continue
            if d.get('rc') != '0':
                x['failed'].append('%s (rc %s)' % (what, d.get('rc')))
                continue
            if d['line'] is None:
                x['missing'].append(what + ' line')
            if lim is not None:
                x.setdefault('limits', {}).setdefault(lim, {}).setdefault(
                    'raw', []).append({
                    'line': d['line'], 'return': fnum(d.get('return')),
                    'dom0_cpu': fnum(d.get('dom0_cpu')),
                    'scrubbed_inline': stats_delta(
                        r['stats'], d.get('seq'), 'scrub', 'pages_inline'),
                    'profile': profile(r['info'].get(d.get('seq')))})
                continue
            x['raw'][tool].append({
                'line': d['line'], 'return': fnum(d.get('return')),
                'dom0_cpu': fnum(d.get('dom0_cpu')),
                'dom0_steal': fnum(d.get('dom0_steal')),
                'scrubbed_inline': stats_delta(r['stats'], d.get('seq'),
                                               'scrub', 'pages_inline'),
                'flushes': stats_delta(r['stats'], d.get('seq'),
                                       'tlb_flushes', 'issued_by_cause',
                                       'populate')})
            if tool == 'vmb':
                p = profile(r['info'].get(d.get('seq')))
                if p:
                    x['raw'][tool][-1]['profile'] = p
    for x in out.values():
        for t in TOOLS:
            raw = x['raw'][t]
            x[t] = spreads(raw, ('line', 'return', 'scrubbed_inline',
                                 'flushes', 'dom0_cpu', 'dom0_steal'))
        x['ratio'] = ratio(x['vmb']['line'], x['xl']['line'])
        # The same over the CPU dom0 used: what the wall time's ratio
        # would be if both tools' vCPUs waited alike for pCPUs.
        x['cpu_ratio'] = ratio(x['vmb']['dom0_cpu'], x['xl']['dom0_cpu'])
        profs = [v['profile'] for v in x['raw']['vmb'] if v.get('profile')]
        x['vmb']['profile'] = {
            k: spread([p[k] for p in profs
                       if isinstance(p.get(k), (int, float))])
            for k in [k for k, _ in PROFILE] + list(DERIVED)} \
            if profs else None
    for xen, x in out.items():
        limits(x, TARGETS.get('dirty_ratio_' + xen))
    return out


# The records that bound vmbuild's dirty figure rather than make it
# (key, tool, clean): its first guest, over clean memory, and its create
# with vmbuildd's threads kept to one dom0 CPU.
LIMITS = (('vmb_clean', 'vmb', True), ('vmb_one_cpu', 'vmb1cpu', False))


def limits(x, target):
    """What the machine leaves vmbuild: clean_floor_ratio, its create over
    clean memory against xl's dirty median (the ratio it would reach if
    scrubbing cost nothing); workers_gain, its populate on one CPU over
    its populate with its workers (above 1: the workers gain); and the
    scrub rate the target asks for: fixed_s, the median of vmbuild's
    dirty creates' time to the line less their populate; the populate
    time the target leaves (target x xl's median - fixed_s) and the MiB/s
    it takes to scrub the guest in it, beside the MiB/s this host gave
    on one CPU and with the workers."""
    lim = x.get('limits')
    if not lim:
        return
    for k, _, _ in LIMITS:
        if k in lim:
            raw = lim[k]['raw']
            lim[k].update(spreads(
                [dict(v, populate=dig(v, 'profile', 'populate'))
                 for v in raw],
                ('line', 'return', 'scrubbed_inline', 'populate',
                 'dom0_cpu')))
    xl_line = dig(x, 'xl', 'line', 'median')
    mb = x.get('mb')
    fixed = [v['line'] - v['profile']['populate'] for v in x['raw']['vmb']
             if v.get('line') and dig(v, 'profile', 'populate')]
    lim['fixed_s'] = round(statistics.median(fixed), 2) if fixed else None
    lim['target'] = target
    budget = round(target * xl_line - lim['fixed_s'], 2) \
        if target and xl_line and lim['fixed_s'] is not None else None
    lim['populate_budget_s'] = budget
    # A budget of nothing or less: the fixed costs alone miss the target.
    lim['needed_mib_s'] = round(mb / budget) if mb and budget and \
        budget > 0 else None
    for k, v in (('one_cpu_mib_s', dig(lim, 'vmb_one_cpu', 'populate',
                                       'median')),
                 ('workers_mib_s', dig(x, 'vmb', 'profile', 'populate',
                                       'median'))):
        lim[k] = round(mb / v) if mb and v else None
    clean = dig(lim, 'vmb_clean', 'line', 'median')
    lim['clean_floor_ratio'] = round(clean / xl_line, 3) \
        if clean and xl_line else None
    one = dig(lim, 'vmb_one_cpu', 'populate', 'median')
    many = dig(x, 'vmb', 'profile', 'populate', 'median')
    lim['workers_gain'] = round(one / many, 2) if one and many else None
    one = dig(lim, 'vmb_one_cpu', 'line', 'median')
    many = dig(x, 'vmb', 'line', 'median')
    lim['one_cpu_line_over_vmb'] = round(one / many, 2) \
        if one and many else None


def restores(recs):
    """The saverestore step's restore times: its first line (each tool
    once, counted where the step said ok=yes: both tools' guests
    continued; vmbuildd's other reader's, restore_vmb_READER=, where
    ok_READER=yes) and its rounds (the
    three restores back to back, a failed one given as "-").  vmbuild's
    two readers apart (libxenguest, engine); 'vmb' is the one vmbuildd
    uses by default (default=, libxenguest in logs that do not say), and
    restore_ratio is its median over xl's."""
    out = {'runs': 0, 'failed': [], 'mb': None, 'default': None}
    got = {t: [] for t in RESTORE_MODES}

    def add(mode, v, where):
        if v == '-' or v is None:
            return
        f = fnum(v)
        if f is None:
            out['failed'].append('%s: %s=%s' % (where, mode, v))
        else:
            got[mode].append(f)

    for r in recs:
        for x in r['restores']:
            out['runs'] += 1
            default = x.get('default', 'libxenguest')
            if default not in RESTORE_MODES:
                default = 'libxenguest'
            out['default'] = out['default'] or default
            out['mb'] = fnum(x.get('mb')) or out['mb']
            if x.get('ok') != 'yes':
                out['failed'].append('%s: ok=%s' % (r['log'], x.get('ok')))
            else:
                add('xl', x.get('restore_xl'), r['log'])
                add(default, x.get('restore_vmb'), r['log'])
            # The other reader's restore, named after it.
            for mode in ('libxenguest', 'engine'):
                if mode == default:
                    continue
                if x.get('ok_' + mode) == 'yes':
                    add(mode, x.get('restore_vmb_' + mode), r['log'])
                elif x.get('ok_' + mode) not in (None, '-'):
                    out['failed'].append('%s: ok_%s=%s' % (
                        r['log'], mode, x.get('ok_' + mode)))
        for x in r['restore_rounds']:
            out['rounds'] = out.get('rounds', 0) + (
                int(fnum(x.get('n')) or 0))
            out['default'] = out['default'] or x.get('default')
            for mode, key in (('xl', 'restore_xl'),
                              ('libxenguest', 'restore_vmb_libxenguest'),
                              ('engine', 'restore_vmb_engine')):
                # The first rounds' lines called libxenguest's restore_vmb.
                vals = x.get(key, x.get('restore_vmb', '')
                             if mode == 'libxenguest' else '')
                for v in vals.split(','):
                    if v == '-':
                        out['failed'].append('%s: round %s failed' % (
                            r['log'], mode))
                    elif v:
                        add(mode, v, r['log'])
    if out['default'] not in RESTORE_MODES:
        out['default'] = 'libxenguest'
    for t in RESTORE_MODES:
        out[t] = spread(got[t])
    out['vmb'] = out[out['default']]
    out['ratio'] = ratio(out['vmb'], out['xl'])
    out['ratio_libxenguest'] = ratio(out['libxenguest'], out['xl'])
    out['ratio_engine'] = ratio(out['engine'], out['xl'])
    return out


def results(paths, commit=None):
    recs = [parse_log(p) for p in paths if os.path.exists(p)]
    cr = creates([c for r in recs for c in r['creates']])
    di = dirty(recs)
    rs = restores(recs)
    j = {
        'create_return_ratio': cr['return_ratio'],
        'create_line_ratio': cr['line_ratio'],
        'dirty_ratio_stock': dig(di, 'stock', 'ratio'),
        'dirty_ratio_companion': dig(di, 'companion', 'ratio'),
        'restore_ratio': rs['ratio'],
        'targets': TARGETS,
        'restore': rs,
        'create': cr,
        'dirty': di,
        'host': {r['log']: r['host'] for r in recs},
        'logs': [r['log'] for r in recs],
        'missing_logs': [p for p in paths if not os.path.exists(p)],
        'commit': commit,
        'date': max((datetime.datetime.fromtimestamp(
            os.path.getmtime(r['log']), datetime.timezone.utc)
            for r in recs), default=None),
    }
    if j['date']:
        j['date'] = j['date'].strftime('%Y-%m-%dT%H:%MZ')
    return j


def fig(s):
    if not s:
        return '-'
    return '%g[%g-%g]' % (s['median'], round(s['min'], 2),
                          round(s['max'], 2))


def fmt(v):
    return '-' if v is None else '%g' % v


def load_text(host):
    if not host or host.get('load_start') is None:
        return '-'
    return '%g-%g/%dcpu' % (host['load_start'], host['load_end'],
                            host['cpus'] or 0)


def cached_text(cr):
    """' kernel_cached=C/N' of vmbuild's rounds that say (older logs
    do not: nothing)."""
    c = cr.get('vmb_kernel_cached', 0)
    n = c + cr.get('vmb_kernel_unpacked', 0)
    return ' kernel_cached=%d/%d' % (c, n) if n else ''


def summary(j):
    """The lines judge.sh prints; nothing when a log has no records."""
    L = []
    cr = j['create']
    loads = ','.join(load_text(h) for h in j['host'].values())
    if cr['rounds']:
        L.append('vmbuild-xen-create: rounds=%d xl_return=%s vmb_return=%s '
                 'return_ratio=%s xl_line=%s vmb_line=%s line_ratio=%s '
                 'load=%s%s' % (
                     cr['rounds'], fig(cr['xl']['return']),
                     fig(cr['vmb']['return']), fmt(cr['return_ratio']),
                     fig(cr['xl']['line']), fig(cr['vmb']['line']),
                     fmt(cr['line_ratio']), loads, cached_text(cr)))
        if cr['xl'].get('cpu') or cr['vmb'].get('cpu'):
            L.append('  create CPU to the line (medians, s): %s' % '; '.join(
                '%s=xl:%s,vmb:%s' % (k, fig(dig(cr, 'xl', 'cpu', k)),
                                     fig(dig(cr, 'vmb', 'cpu', k)))
                for k in ('toolstack_cpu', 'guest_cpu', 'dom0_cpu',
                          'dom0_steal', 'xenstored_cpu', 'vmbuildd_cpu')))
        for k, what in (('dropped', 'dropped, not counted'),
                        ('failed', 'failed'), ('missing', 'missing figure')):
            if cr[k]:
                L.append('  create rounds %s: %s' % (what, ', '.join(cr[k])))
    for xen, x in sorted(j['dirty'].items()):
        per = {}
        for k in ('scrubbed_inline', 'flushes'):
            v = [(t, x[t][k]) for t in TOOLS if x[t][k]]
            per[k] = ','.join('%s:%g' % (t, s['median']) for t, s in v) \
                if v else 'na'
        L.append('vmbuild-xen-dirty: xen=%s xl=%s vmb=%s ratio=%s '
                 'scrubbed_inline=%s flushes=%s mb=%s hogs=%s filled=%s '
                 'load=%s' % (
                     xen, fig(x['xl']['line']), fig(x['vmb']['line']),
                     fmt(x['ratio']), per['scrubbed_inline'],
                     per['flushes'], fmt(x['mb']), fmt(x['hogs']),
                     fmt(x['filled']),
                     load_text(j['host'].get(x['log']))))
        if x['xl'].get('dom0_cpu') or x['vmb'].get('dom0_cpu'):
            L.append('  dirty %s dom0 CPU to the return: xl=%s vmb=%s '
                     'vmb1cpu=%s cpu_ratio=%s; steal xl=%s vmb=%s' % (
                         xen, fig(x['xl'].get('dom0_cpu')),
                         fig(x['vmb'].get('dom0_cpu')),
                         fig(dig(x, 'limits', 'vmb_one_cpu', 'dom0_cpu')),
                         fmt(x['cpu_ratio']),
                         fig(x['xl'].get('dom0_steal')),
                         fig(x['vmb'].get('dom0_steal'))))
        pr = x['vmb'].get('profile')
        if pr:
            L.append('  dirty %s vmb profile (medians): %s' % (xen, ' '.join(
                '%s=%s' % (k, fmt(dig(pr, k, 'median')))
                for k in [k for k, _ in PROFILE] + list(DERIVED))))
        lim = x.get('limits')
        if lim:
            L.append('  dirty %s limits: vmb_clean_line=%s clean_floor_ratio=%s '
                     'vmb_clean_populate=%s vmb_one_cpu_line=%s '
                     'one_cpu_populate=%s workers_populate=%s '
                     'workers_gain=%s' % (
                         xen, fig(dig(lim, 'vmb_clean', 'line')),
                         fmt(lim.get('clean_floor_ratio')),
                         fig(dig(lim, 'vmb_clean', 'populate')),
                         fig(dig(lim, 'vmb_one_cpu', 'line')),
                         fig(dig(lim, 'vmb_one_cpu', 'populate')),
                         fig(dig(x, 'vmb', 'profile', 'populate')),
                         fmt(lim.get('workers_gain'))))
            L.append('  dirty %s target %s: fixed_s=%s populate_budget_s=%s '
                     'needed_mib_s=%s one_cpu_mib_s=%s workers_mib_s=%s' % (
                         xen, fmt(lim.get('target')), fmt(lim.get('fixed_s')),
                         fmt(lim.get('populate_budget_s')),
                         'unreachable' if lim.get('populate_budget_s')
                         is not None and lim['populate_budget_s'] <= 0
                         else fmt(lim.get('needed_mib_s')),
                         fmt(lim.get('one_cpu_mib_s')),
                         fmt(lim.get('workers_mib_s'))))
        for k, what in (('failed', 'failed'), ('missing', 'missing figure'),
                        ('dropped', 'dropped, not counted')):
            if x[k]:
                L.append('  dirty %s %s: %s' % (xen, what, ', '.join(x[k])))
    rs = j['restore']
    if rs['runs']:
        L.append('vmbuild-xen-restore: runs=%d xl=%s vmb=%s ratio=%s mb=%s '
                 'default=%s libxenguest=%s engine=%s ratio_libxenguest=%s '
                 'ratio_engine=%s'
                 % (rs['runs'], fig(rs['xl']), fig(rs['vmb']),
                    fmt(rs['ratio']), fmt(rs['mb']), rs['default'],
                    fig(rs['libxenguest']), fig(rs['engine']),
                    fmt(rs['ratio_libxenguest']), fmt(rs['ratio_engine'])))
        if rs['failed']:
            L.append('  restore failed: ' + ', '.join(rs['failed']))
    return L


def plot(j, path):
    """Bars: each tool's median with its min-max, per figure (gnuplot,
    through bench/report.py's helper: an SVG and a PNG)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import report
    rows = []
    cr = j['create']
    for label, a, b in (
            ('create, return', cr['xl']['return'], cr['vmb']['return']),
            ('create, guest line', cr['xl']['line'], cr['vmb']['line']),
            ('dirty, stock', dig(j, 'dirty', 'stock', 'xl', 'line'),
             dig(j, 'dirty', 'stock', 'vmb', 'line')),
            ('dirty, companion', dig(j, 'dirty', 'companion', 'xl', 'line'),
             dig(j, 'dirty', 'companion', 'vmb', 'line')),
            ('restore', dig(j, 'restore', 'xl'), dig(j, 'restore', 'vmb'))):
        if a and b:
            rows.append('"%s" %g %g %g %g %g %g' % (
                label, a['median'], a['min'], a['max'],
                b['median'], b['min'], b['max']))
    if not rows:
        return None
    sc = [report.SVG, 'set style data histogram',
          'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.7', 'set boxwidth 0.9',
          'set ylabel "seconds (median; bars: min-max)"', 'set yrange [0:*]',
          'set title "Real Xen under QEMU, xl and vmbuild side by side '
          '(%s, %s)"' % (j.get('date') or '?', j.get('commit') or '?'),
          '$d << EOD', '\n'.join(rows), 'EOD',
          'plot $d using 2:3:4:xtic(1) title "xl" lc rgb "#d95f02", '
          '$d using 5:6:7 title "vmbuild" lc rgb "#1b9e77"']
    return report.gnuplot('\n'.join(sc) + '\n', path)


def git_commit():
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'],
                              capture_output=True, text=True,
                              check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv):
    out = svg = commit = None
    only_summary = False
    paths = []
    it = iter(argv)
    for a in it:
        if a == '--summary':
            only_summary = True
        elif a in ('--out', '--plot', '--commit'):
            v = next(it, None)
            if v is None:
                print('xen-results.py: %s needs a value' % a, file=sys.stderr)
                return 2
            if a == '--out':
                out = v
            elif a == '--plot':
                svg = v
            else:
                commit = v
        elif a.startswith('-'):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            paths.append(a)
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    j = results(paths, commit or (None if only_summary else git_commit()))
    for line in summary(j):
        print(line)
    if only_summary:
        return 0
    for p in j['missing_logs']:
        print('xen-results.py: no log %s (its figures are null)' % p)
    if out:
        os.makedirs(os.path.dirname(out) or '.', exist_ok=True)
        with open(out, 'w') as f:
            json.dump(j, f, indent=1, sort_keys=True)
            f.write('\n')
        print('xen-results.py: wrote %s' % out)
    if svg:
        os.makedirs(os.path.dirname(svg) or '.', exist_ok=True)
        made = plot(j, svg)
        print('xen-results.py: plot %s' % (made or 'not made'))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
