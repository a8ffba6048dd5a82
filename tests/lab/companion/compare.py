#!/usr/bin/env python3
"""compare.py DIR - judge the companion lab and print Xen beside hvsim.

DIR (build/lab-companion) holds one console log per lab run, written by
tests/lab/run.sh, with the CMPJSON / CMPERR / CMPPERF lines that
dom0.sh printed, and sim.log, the same sequence on hvsim (sim.sh):

  numa/console.log        patched Xen, 2 NUMA nodes, HAP
  shadow/console.log      patched Xen with perf counters, no HAP
  shadow-off/console.log  patched Xen, no HAP, shadow-flood=0 at boot
  stock/console.log       Debian's Xen
  sim.log                 hvsim, the numa sequence

Every check of the issue's "In the lab" section is made here, from the
recorded figures; each prints "ok" or "FAIL" with the numbers.  Then the
side-by-side table, every difference between Xen and hvsim with the
reason it is expected, and last the line
  companion: scrubbed_bytes=N filter_evaluations=N flushes_issued=N
             batches=N write_flood=N early=N
Exit 0 only when every check passed.
"""
import json
import os
import re
import sys

MIB = 1 << 20
LINE = re.compile(r'(CMPJSON|CMPERR|CMPPERF) (\S+) ?(.*)$')


class Run:
    """The records of one run: json[name] = (rc, obj), err, perf."""

    def __init__(self, path):
        self.path = path
        self.json, self.err, self.perf = {}, {}, {}
        self.present = os.path.exists(path)
        self.bad = []
        if not self.present:
            return
        with open(path, errors='replace') as f:
            for raw in f:
                m = LINE.search(raw.replace('\r', '').rstrip('\n'))
                if not m:
                    continue
                kind, name, rest = m.groups()
                if kind == 'CMPERR':
                    self.err[name] = rest
                elif kind == 'CMPPERF':
                    self.perf[name] = dict(
                        (k, int(v)) for k, v in
                        (p.rsplit('=', 1) for p in rest.split() if '=' in p)
                        if v.isdigit())
                else:
                    rc, _, body = rest.partition(' ')
                    obj = None
                    if body.strip():
                        try:
                            obj = json.loads(body)
                        except ValueError:
                            self.bad.append(name)
                    self.json[name] = (int(rc.split('=')[1]), obj)

    def get(self, name):
        return self.json.get(name, (None, None))[1]

    def rc(self, name):
        return self.json.get(name, (None, None))[0]


def dig(obj, *path, default=None):
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return default
        obj = obj[p]
    return obj


def delta(a, b, *path):
    x, y = dig(a, *path), dig(b, *path)
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        return None
    return y - x


def nodes_sum(scrub, key):
    if not scrub:
        return None
    return sum(n.get(key) or 0 for n in scrub.get('nodes', []))


class Judge:
    def __init__(self):
        self.failed = []

    def check(self, name, ok, detail):
        print('%-4s %s: %s' % ('ok' if ok else 'FAIL', name, detail))
        if not ok:
            self.failed.append(name)


def fmt_bytes(v):
    if v is None:
        return '-'
    if abs(v) >= 1 << 30 and v % (1 << 20) == 0:
        return '%.2f GiB' % (v / (1 << 30))
    if abs(v) >= MIB:
        return '%d MiB' % (v // MIB)
    return '%d B' % v


def sequence(r):
    """The numa sequence's figures, the same keys for Xen and hvsim."""
    s = {}
    host = r.get('host') or {}
    s['nodes'] = host.get('nr_nodes')
    s['cpus'] = host.get('nr_cpus')
    s['node_total'] = [n.get('total_bytes') for n in host.get('nodes', [])]
    boot = r.get('scrub-boot')
    s['boot_done'] = bool(boot) and all(
        n.get('boot_scrub_done') for n in boot.get('nodes', []))
    s['boot_dirty'] = nodes_sum(boot, 'dirty_bytes')
    s['scrubbed_at_boot'] = nodes_sum(boot, 'scrubbed_bytes_total')
    s1, s2 = r.get('scrub-1'), r.get('scrub-2')
    polls = [dig(v[1], 'scrub') for k, v in sorted(
        r.json.items()) if k.startswith('poll-') and v[1]]
    dirt = [nodes_sum(p, 'dirty_bytes') for p in polls if p]
    s['dirty_before'] = nodes_sum(s1, 'dirty_bytes')
    s['dirty_destroyed'] = nodes_sum(r.get('scrub-dirty'), 'dirty_bytes')
    s['dirty_max'] = max(dirt + [s['dirty_destroyed'] or 0]) \
        if polls or s['dirty_destroyed'] is not None else None
    s['polls'] = len(polls)
    s['dirty_after'] = nodes_sum(s2, 'dirty_bytes')
    a, b = nodes_sum(s1, 'scrubbed_bytes_total'), \
        nodes_sum(s2, 'scrubbed_bytes_total')
    s['scrubbed_growth'] = b - a if a is not None and b is not None else None
    s['all_boot_done_after'] = bool(s2) and all(
        n.get('boot_scrub_done') for n in s2.get('nodes', []))
    for g in ('a', 'b'):
        info = r.get('info-cmp-' + g)
        pop = dig(info, 'build', 'populate') or {}
        s[g + '_nodes'] = dig(info, 'build', 'placement', 'nodes')
        s[g + '_calls'] = pop.get('calls')
        for k in ('flushes_issued', 'flushes_avoided', 'filter_evaluations',
                  'pages_scrubbed_inline', 'pages_fallback'):
            s[g + '_' + k] = pop.get(k)
        ext = pop.get('extents') or {}
        s[g + '_extents'] = '%s/%s/%s' % (ext.get('4k'), ext.get('2m'),
                                          ext.get('1g'))
    st2, st3 = r.get('stats-2'), r.get('stats-3')
    s['d_evaluations'] = delta(st2, st3, 'tlb_flushes', 'filter_evaluations')
    s['d_issued_populate'] = delta(st2, st3, 'tlb_flushes', 'issued_by_cause',
                                   'populate')
    s['d_filtered_populate'] = delta(st2, st3, 'tlb_flushes',
                                     'filtered_by_cause', 'populate')
    s['d_issued_other'] = delta(st2, st3, 'tlb_flushes', 'issued_by_cause',
                                'other')
    s['d_issued_free'] = delta(st2, st3, 'tlb_flushes', 'issued_by_cause',
                               'free')
    s['d_ipis'] = delta(st2, st3, 'tlb_flushes', 'cpu_ipis')
    s['d_populate_calls'] = delta(st2, st3, 'populate', 'calls')
    s['d_pages_2m'] = delta(st2, st3, 'populate', 'pages', '2m')
    s['d_pages_4k'] = delta(st2, st3, 'populate', 'pages', '4k')
    st0, st4 = r.get('stats-0'), r.get('stats-4')
    s['d_created'] = delta(st0, st4, 'populate', 'domains_created')
    s['d_destroyed'] = delta(st0, st4, 'populate', 'domains_destroyed')
    s['d_scrub_background'] = delta(st0, st4, 'scrub', 'pages_background')
    s['d_scrub_inline'] = delta(st0, st4, 'scrub', 'pages_inline')
    return s


# Rows of the side-by-side table: key, label, formatter.
ROWS = [
    ('nodes', 'NUMA nodes', str), ('cpus', 'CPUs', str),
    ('node_total', 'memory per node', lambda v: ', '.join(
        fmt_bytes(x) for x in v) if v else '-'),
    ('boot_done', 'boot scrub done on every node', str),
    ('boot_dirty', 'dirty after the boot scrub', fmt_bytes),
    ('scrubbed_at_boot', 'scrubbed by then (all nodes)', fmt_bytes),
    ('a_nodes', 'guest A (512 MiB): node', str),
    ('a_calls', '  populate calls (batches)', str),
    ('a_extents', '  extents 4k/2m/1g', str),
    ('a_filter_evaluations', '  filter evaluations', str),
    ('a_flushes_issued', '  flushes issued', str),
    ('a_flushes_avoided', '  flushes avoided', str),
    ('a_pages_scrubbed_inline', '  pages scrubbed inline', str),
    ('dirty_before', 'destroy A: dirty before', fmt_bytes),
    ('dirty_destroyed', '  dirty right after', fmt_bytes),
    ('dirty_max', '  dirty, most seen after', fmt_bytes),
    ('polls', '  scrub samples (100 ms)', str),
    ('dirty_after', '  dirty once scrubbed', fmt_bytes),
    ('scrubbed_growth', '  scrubbed grew by', fmt_bytes),
    ('b_nodes', 'guest B over A\'s pages: node', str),
    ('b_calls', '  populate calls (batches)', str),
    ('b_extents', '  extents 4k/2m/1g', str),
    ('b_filter_evaluations', '  filter evaluations', str),
    ('b_flushes_issued', '  flushes issued', str),
    ('b_flushes_avoided', '  flushes avoided', str),
    ('b_pages_scrubbed_inline', '  pages scrubbed inline', str),
    ('b_pages_fallback', '  pages off the node asked', str),
    ('d_populate_calls', 'counters over B\'s build: populate calls', str),
    ('d_pages_2m', '  pages populated as 2M', str),
    ('d_pages_4k', '  pages populated as 4K', str),
    ('d_evaluations', '  filter evaluations (all)', str),
    ('d_issued_populate', '  flushes issued, populate', str),
    ('d_filtered_populate', '  flushes avoided, populate', str),
    ('d_issued_free', '  flushes issued, free', str),
    ('d_issued_other', '  flushes issued, other', str),
    ('d_ipis', '  CPUs interrupted', str),
    ('d_created', 'whole sequence: domains created', str),
    ('d_destroyed', '  domains destroyed', str),
    ('d_scrub_background', '  pages scrubbed in the background', str),
    ('d_scrub_inline', '  pages scrubbed inline', str),
]

# Why a row may differ between the patched Xen and hvsim.
REASONS = {
    'scrubbed_at_boot': 'Xen scrubs the free RAM left after dom0 and its '
                        'own heap; hvsim all of its modelled memory',
    'a_filter_evaluations': 'depends on whether any page had an owner '
                            'before (boot RAM never had one)',
    'a_flushes_avoided': 'as filter evaluations',
    'dirty_destroyed': 'hvsim\'s memory is phantom (metadata only): its '
                       'workers scrub 512 MiB before vmctl can look; Xen\'s '
                       'idle-loop scrubber waits while dom0 keeps every CPU '
                       'busy (dom0.sh)',
    'dirty_max': 'as dirty right after',
    'scrubbed_growth': 'Xen also scrubs what else was freed meanwhile: the '
                       'guest\'s special pages, its p2m and paging-pool pages',
    'polls': 'as the samples are taken for as long as scrubbing lasts',
    'b_flushes_issued': 'whether a CPU has not flushed since A\'s pages were '
                        'freed: hvsim\'s CPUs flush on modelled context '
                        'switches while a domain runs, Xen\'s idle CPUs may '
                        'not have flushed at all',
    'b_flushes_avoided': 'as flushes issued (issued + avoided = evaluations)',
    'd_populate_calls': 'Xen: + 2 XENMEM_populate_physmap, for the 8 special '
                        'pages (xenstore, console, ...) and for the ACPI '
                        'tables\' page, which hvsim\'s domains do not have',
    'd_pages_4k': 'as populate calls: the special pages and the ACPI page',
    'd_evaluations': 'Xen also filters for its own allocations and for dom0\'s '
                     'page-type changes (a PV dom0 runs the toolstack)',
    'd_issued_populate': 'as flushes issued, plus the special and ACPI '
                         'pages\' populate_physmap on Xen',
    'd_filtered_populate': 'as flushes avoided, plus the special and ACPI '
                           'pages\' '
                           'populate_physmap on Xen (which filters since '
                           'patch 1)',
    'd_issued_other': 'Xen: dom0\'s page-type changes and allocations; '
                      'hvsim: modelled context-switch flushes (--switch-hz)',
    'd_ipis': 'Xen counts remote CPUs only (the local TLB is flushed '
              'directly); hvsim counts every CPU flushed',
    'd_created': 'Xen counts every domain, the xl-free lab creates none '
                 'besides these; equal unless the toolstack retried',
    'd_scrub_background': 'Xen: whatever dom0 and Xen freed meanwhile is '
                          'scrubbed too',
    'd_scrub_inline': 'Xen: allocations that found only dirty pages '
                      '(dom0\'s own, order 0, take dirty pages at once)',
    'node_total': 'Xen reports spanned pages (QEMU leaves holes below 1 MiB '
                  'and 4 GiB on node 0)',
}


def judge_numa(j, x, h, xs, hs):
    print('\n== two NUMA nodes, patched Xen (numa/) and hvsim (sim.log)')
    desc = dig(x.get('host'), 'hypervisor') or ''
    j.check('xen: companion detected', all(
        w in desc for w in ('companion:', 'scrub', 'counters', 'populate')),
        repr(desc))
    j.check('xen: two NUMA nodes', xs['nodes'] == 2, 'nr_nodes=%s' % xs['nodes'])
    for name, s in (('xen', xs), ('hvsim', hs)):
        j.check(name + ': boot scrub done on every node',
                s['boot_done'] and s['boot_dirty'] == 0,
                'done=%s dirty=%s' % (s['boot_done'], fmt_bytes(s['boot_dirty'])))
        j.check(name + ': scrubbed grew by >= 512 MiB after destroying A',
                (s['scrubbed_growth'] or 0) >= 512 * MIB,
                fmt_bytes(s['scrubbed_growth']))
        j.check(name + ': dirty back to 0', s['dirty_after'] == 0,
                fmt_bytes(s['dirty_after']))
        ok = all(s[k] is not None for k in (
            'b_calls', 'b_flushes_issued', 'b_filter_evaluations'))
        j.check(name + ': B built with the batched populate (per-batch stats)',
                ok and s['b_calls'] >= 1,
                'calls=%s flushes_issued=%s filter_evaluations=%s' % (
                    s['b_calls'], s['b_flushes_issued'],
                    s['b_filter_evaluations']))
        if ok:
            j.check(name + ': at most one flush per batch',
                    s['b_flushes_issued'] <= s['b_calls'],
                    '%d flushes, %d batches' % (s['b_flushes_issued'],
                                                s['b_calls']))
            j.check(name + ': the filter ran over A\'s freed pages',
                    s['b_filter_evaluations'] > 0 and
                    s['b_filter_evaluations'] <= s['b_calls'] and
                    s['b_flushes_issued'] + (s['b_flushes_avoided'] or 0) ==
                    s['b_filter_evaluations'],
                    'evaluations=%s issued=%s avoided=%s' % (
                        s['b_filter_evaluations'], s['b_flushes_issued'],
                        s['b_flushes_avoided']))
    j.check('xen: dirty memory rose when A was destroyed',
            (xs['dirty_max'] or 0) > (xs['dirty_before'] or 0),
            'before %s, right after %s, most seen %s (%d samples at 100 ms)'
            % (fmt_bytes(xs['dirty_before']), fmt_bytes(xs['dirty_destroyed']),
               fmt_bytes(xs['dirty_max']), xs['polls']))
    j.check('xen: one call per batch (counters: batches + the special pages'
            ' + the ACPI tables\' pages)',
            xs['d_populate_calls'] is not None and xs['b_calls'] is not None
            and xs['d_populate_calls'] == xs['b_calls'] + 2,
            'populate calls +%s, batches %s' % (xs['d_populate_calls'],
                                               xs['b_calls']))
    j.check('xen: no flush counted as "free"', xs['d_issued_free'] == 0,
            'issued_by_cause.free +%s' % xs['d_issued_free'])
    j.check('same batches on Xen and hvsim', xs['b_calls'] == hs['b_calls'],
            'xen %s, hvsim %s' % (xs['b_calls'], hs['b_calls']))

    print('\n%-44s %16s %16s' % ('build-and-destroy sequence', 'patched Xen',
                                 'hvsim'))
    diffs = []
    for key, label, f in ROWS:
        a, b = f(xs.get(key)), f(hs.get(key))
        mark = '' if a == b else ' *'
        print('%-44s %16s %16s%s' % (label, a, b, mark))
        if a != b:
            diffs.append((label.strip(), a, b, REASONS.get(
                key, 'not expected: look at both logs')))
    print('\ndifferences (* above), and why:')
    for label, a, b, why in diffs:
        print('- %s: Xen %s, hvsim %s - %s' % (label, a, b, why))
    if not diffs:
        print('- none')
    unexplained = [d for d in diffs if d[3].startswith('not expected')]
    j.check('every difference from hvsim is explained', not unexplained,
            ', '.join(d[0] for d in unexplained) or 'all %d' % len(diffs))
    # The series' tools/tests/mm-stats through its libxenctrl, when the
    # run was given them (CMP_LIVE); CI builds no patched tools.
    if x.rc('mm-stats') is None:
        print('     test-mm-stats: not run (CMP_LIVE unset)')
    else:
        live = x.get('mm-stats') or {}
        j.check('test-mm-stats (the series\' libxenctrl) passes on this Xen',
                x.rc('mm-stats') == 0 and live.get('failures') == 0 and
                live.get('skips') == 0,
                'rc=%s failures=%s skips=%s' % (
                    x.rc('mm-stats'), live.get('failures'), live.get('skips')))


def shadow_deltas(r, a, b):
    sa, sb = r.get(a), r.get(b)
    out = {}
    for k in ('write_flood', 'early', 'other', 'emulated_pt_writes',
              'shadow_faults'):
        out[k] = delta(sa, sb, 'unshadow', k)
    return out


def judge_shadow(j, sh, off):
    print('\n== shadow paging (-npt): write-flood unshadow')
    flood = {}
    if sh.present:
        d = shadow_deltas(sh, 'stats-0', 'stats-1')
        flood = d
        j.check('shadow: write-flood unshadows (shadow-flood=3 on Xen\'s line)',
                (d['write_flood'] or 0) > 0,
                'write_flood +%s early +%s other +%s emulated_pt_writes +%s '
                'shadow_faults +%s' % (d['write_flood'], d['early'],
                                       d['other'], d['emulated_pt_writes'],
                                       d['shadow_faults']))
        j.check('shadow: early unshadows (zero writes) counted',
                (d['early'] or 0) > 0, 'early +%s' % d['early'])
        p0, p1 = sh.perf.get('perf-0'), sh.perf.get('perf-1')
        if p0 and p1:
            def pd(name):
                return p1.get(name, 0) - p0.get(name, 0)
            early_p = pd('shadow_unshadows_for_fork/exit')
            all_p = pd('shadow_unshadows_a_page')
            faults_p = pd('calls_to_shadow_fault')
            ours = sum(d[k] or 0 for k in ('write_flood', 'early', 'other'))
            j.check('perf counters agree: early unshadows',
                    early_p == d['early'],
                    'vmstat %s, perfc %s' % (d['early'], early_p))
            j.check('perf counters agree: all unshadows',
                    all_p == ours, 'vmstat %s (flood+early+other), perfc %s' %
                    (ours, all_p))
            j.check('perf counters agree: shadow faults',
                    faults_p == d['shadow_faults'],
                    'vmstat %s, perfc %s' % (d['shadow_faults'], faults_p))
        else:
            j.check('perf counters read (xen-perfc.gz)', False,
                    'no CMPPERF lines in %s' % sh.path)
        if sh.get('stats-3') is not None:
            d0 = shadow_deltas(sh, 'stats-2', 'stats-3')
            j.check('shadow: none after xl set-parameters shadow-flood=0',
                    d0['write_flood'] == 0 and (d0['early'] or 0) > 0,
                    'write_flood +%s early +%s emulated_pt_writes +%s' % (
                        d0['write_flood'], d0['early'],
                        d0['emulated_pt_writes']))
            # The same workload in the same boot: what unshadowing saved.
            j.check('shadow: write-flood unshadows save emulated writes',
                    (d['emulated_pt_writes'] or 0) <
                    (d0['emulated_pt_writes'] or 0),
                    'emulated page-table writes %s with shadow-flood=3, '
                    '%s with 0; shadow faults %s and %s' % (
                        d['emulated_pt_writes'], d0['emulated_pt_writes'],
                        d['shadow_faults'], d0['shadow_faults']))
    if sh.present:
        # The series' test of its first patch, on this (perfc) build: a
        # domain under construction got the flush its pages were owed.
        rc, pf = sh.rc('populate-flush'), sh.get('populate-flush') or {}
        cycles = pf.get('cycles') or []
        j.check('test-populate-flush: populate_physmap flushed for a domain '
                'under construction',
                rc == 0 and not pf.get('skipped') and bool(cycles) and
                cycles[-1][1] > cycles[-1][0],
                'rc=%s skipped=%s "PG_need_flush tlb flushes" around each '
                'cycle\'s populate: %s' % (
                    rc, pf.get('skipped'),
                    ', '.join('%d -> %d' % tuple(c) for c in cycles) or
                    'none'))
    if off.present:
        d = shadow_deltas(off, 'stats-0', 'stats-1')
        j.check('shadow: none with shadow-flood=0 on Xen\'s command line',
                d['write_flood'] == 0 and (d['early'] or 0) > 0,
                'write_flood +%s early +%s emulated_pt_writes +%s' % (
                    d['write_flood'], d['early'], d['emulated_pt_writes']))
        if flood.get('emulated_pt_writes') is not None and \
                d['emulated_pt_writes'] is not None:
            print('     emulated page-table writes for the same workload: '
                  '%s with shadow-flood=3, %s with 0' % (
                      flood['emulated_pt_writes'], d['emulated_pt_writes']))
    if sh.present:
        # The workload timed by the guest's own clock (its cmdline line to
        # its ptwrite line), in the same boot: shadow-flood=3, then 0.
        # A figure, not a check: TCG, and the order is always the same.
        w = ptwrite_seconds(sh.path)
        print('     the guest\'s page-table workload took %s s with '
              'shadow-flood=3, %s s after shadow-flood=0 (the guest\'s '
              'clock, same boot)' % (w.get('cmp-sh', '?'),
                                     w.get('cmp-sh0', '?')))
    return flood


def ptwrite_seconds(path):
    """{guest name: seconds from its cmdline line to its ptwrite line}."""
    start, secs, names = {}, {}, {}
    cmd = re.compile(r'\(d(\d+)\) \[\s*([\d.]+)\] vmbuild-guest: '
                     r'cmdline: lab=(\S+)')
    end = re.compile(r'\(d(\d+)\) \[\s*([\d.]+)\] vmbuild-guest: '
                     r'ptwrite \d+\+\d+ rounds')
    with open(path, errors='replace') as f:
        for raw in f:
            m = cmd.search(raw)
            if m and m.group(1) not in start:
                start[m.group(1)] = float(m.group(2))
                names[m.group(1)] = m.group(3)
                continue
            m = end.search(raw)
            if m and m.group(1) in start and m.group(1) not in secs:
                secs[m.group(1)] = float(m.group(2)) - start[m.group(1)]
    return dict((names[d], '%.2f' % v) for d, v in secs.items())


def judge_stock(j, st):
    print('\n== Debian\'s Xen (stock/)')
    desc = dig(st.get('host'), 'hypervisor') or ''
    j.check('stock: no companion', 'stock' in desc and 'companion' not in desc,
            repr(desc))

    def unavailable(name):
        rc, obj = st.rc(name), st.get(name)
        err = st.err.get(name, '')
        if rc == 1 and ('1009' in err or 'does not report' in err):
            return True, 'rc=1: %s' % err.strip()[:70]
        if rc == 0 and isinstance(obj, dict) and all(
                obj.get(g) is None for g in ('tlb_flushes', 'unshadow',
                                             'populate', 'scrub')):
            return True, 'every group null'
        return False, 'rc=%s err=%r obj=%s' % (rc, err[:60], str(obj)[:80])
    for n in ('scrub-stock', 'stats-stock'):
        ok, why = unavailable(n)
        j.check('stock: vmctl %s answers unavailable' % n.split('-')[0], ok,
                why)
    pop = dig(st.get('info-cmp-st'), 'build', 'populate') or {}
    j.check('stock: per-batch flush statistics unavailable',
            bool(pop) and pop.get('flushes_issued') is None and
            pop.get('filter_evaluations') is None,
            'flushes_issued=%s filter_evaluations=%s calls=%s' % (
                pop.get('flushes_issued'), pop.get('filter_evaluations'),
                pop.get('calls')))


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else 'build/lab-companion'
    runs = {n: Run(os.path.join(d, n, 'console.log'))
            for n in ('numa', 'shadow', 'shadow-off', 'stock')}
    sim = Run(os.path.join(d, 'sim.log'))
    j = Judge()
    for n, r in list(runs.items()) + [('sim', sim)]:
        j.check('%s: records present' % n, r.present and r.json and not r.bad,
                '%s, %d records%s' % (r.path, len(r.json), ', unparsable: ' +
                                      ' '.join(r.bad) if r.bad else ''))
    xs, hs = sequence(runs['numa']), sequence(sim)
    judge_numa(j, runs['numa'], sim, xs, hs)
    flood = judge_shadow(j, runs['shadow'], runs['shadow-off'])
    judge_stock(j, runs['stock'])
    print('\n%d checks failed%s' % (len(j.failed), ': ' + ', '.join(j.failed)
                                   if j.failed else ''))
    print('companion: scrubbed_bytes=%d filter_evaluations=%d '
          'flushes_issued=%d batches=%d write_flood=%d early=%d' % (
              xs['scrubbed_growth'] or 0, xs['b_filter_evaluations'] or 0,
              xs['b_flushes_issued'] or 0, xs['b_calls'] or 0,
              flood.get('write_flood') or 0, flood.get('early') or 0))
    return 1 if j.failed else 0


if __name__ == '__main__':
    sys.exit(main())
