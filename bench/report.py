#!/usr/bin/env python3
"""report.py - turn the benchmarks' raw JSON lines into figures.

  report.py --summary NAME DIR    print the summary of DIR/NAME.jsonl
  report.py --all DIR OUT         write OUT/latest.json (every raw figure,
                                  the summaries and the tracked keys),
                                  OUT/latest.md (the table) and the plots
                                  (gnuplot, OUT/*.svg)

  report.py --unjudged NAME DIR  print the targets of DIR/NAME.jsonl whose
                                  spread is too wide to judge (run-bench
                                  then measures that benchmark once more)

Every ratio compares figures taken in the same run, interleaved.  Where
rounds pair a figure with its baseline (same round, back to back), the
ratio is the median of the per-round ratios; "best" and "median" of each
side are given beside it.  A headline figure (a target's key) is the
median of its rounds (at least 5) with its spread: min, max, IQR and
(max - min) / median.  When that spread is over SPREAD_MAX and the
target's bound lies between min and max, the round-to-round noise could
decide the verdict: the figure is "unjudged: spread X", neither met nor
missed.
"""
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict

GIB = 1 << 30


def load(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith('{'):
                    rows.append(json.loads(line))
    return rows


def med(v):
    return statistics.median(v) if v else None


def stat(v):
    """best (smallest) and median of times."""
    return {'n': len(v), 'best': min(v) if v else None, 'median': med(v)}


def rstat(v):
    """best (largest) and median of rates."""
    return {'n': len(v), 'best': max(v) if v else None, 'median': med(v)}


SPREAD_MAX = 0.25


def spread(v):
    """The rounds of a headline figure: median, min, max, IQR, spread."""
    v = [x for x in v if x is not None]
    if not v:
        return None
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    m = med(v)
    return {'n': len(v), 'median': r3(m), 'min': r3(min(v)),
            'max': r3(max(v)), 'iqr': r3(q[2] - q[0]),
            'spread': r3((max(v) - min(v)) / m) if m else None}


def ratio(a, b):
    return a / b if a is not None and b else None


def r3(x):
    return None if x is None else round(x, 3)


# ---------------------------------------------------------------- populate

def populate(rows):
    builds = [r for r in rows if r['kind'] == 'build']
    nts = [r for r in rows if r['kind'] == 'nt']
    sizes = sorted({r['size_mib'] for r in builds})
    # variant: (label, strategy) -> name, memory state
    names = {('clean', 'engine'): ('clean', 'engine'),
             ('clean', 'libxl'): ('clean', 'libxl'),
             ('alloc-clean', 'libxl'): ('clean', 'alloc'),
             ('dirty', 'engine'): ('dirty', 'engine'),
             ('dirty', 'libxl'): ('dirty', 'libxl'),
             ('alloc-dirty', 'libxl'): ('dirty', 'alloc')}
    times = defaultdict(list)       # (mem, variant, size) -> [s]
    counts = {}
    paired = defaultdict(dict)      # (label, size, round) -> strategy -> s
    for r in builds:
        mem, var = names[(r['label'], r['variant'])]
        times[(mem, var, r['size_mib'])].append(r['populate_s'])
        counts[(mem, var, r['size_mib'])] = {
            k: r[k] for k in ('calls', 'inline_pages', 'filter_evaluations',
                              'flushes_issued', 'flushes_avoided', 'workers',
                              'nodes')}
        paired[(r['label'], r['size_mib'], r['round'])][r['variant']] = \
            r['populate_s']
    ntp = defaultdict(dict)
    for r in nts:
        ntp[(r['size_mib'], r['round'])][r['threads']] = r['seconds']
    out = {'sizes_mib': sizes, 'variants': {}, 'nt': {}, 'by_size': {}}
    for (mem, var, size), v in sorted(times.items()):
        e = stat(v)
        e['gib_per_s_median'] = r3(size / 1024 / e['median'])
        e.update(counts[(mem, var, size)])
        out['variants'].setdefault(mem, {}).setdefault(var, {})[str(size)] = e
    for size in sizes:
        d = {}
        for mem in ('clean', 'dirty'):
            pr = [v['libxl'] / v['engine'] for (lab, s, _), v in
                  paired.items() if lab == mem and s == size and
                  'libxl' in v and 'engine' in v]
            d['%s_engine_over_libxl' % mem] = r3(med(pr))
            d['%s_engine_over_libxl_rounds' % mem] = len(pr)
            eng = times.get((mem, 'engine', size))
            alc = times.get((mem, 'alloc', size))
            if eng and alc:
                d['%s_speedup_vs_alloc' % mem] = r3(med(alc) / med(eng))
        t1 = [v[1] for (s, _), v in ntp.items() if s == size and 1 in v]
        t2 = [v[2] for (s, _), v in ntp.items() if s == size and 2 in v]
        pr = [v[1] / v[2] for (s, _), v in ntp.items()
              if s == size and 1 in v and 2 in v]
        if t1:
            out['nt'][str(size)] = {
                '1': stat(t1), '2': stat(t2),
                'gb_per_s_1_median': r3(size * 1048576 / 1e9 / med(t1)),
                'gb_per_s_2_median': r3(size * 1048576 / 1e9 / med(t2))}
            d['nt_parallel_ratio'] = r3(med(pr))
            eng = times.get(('dirty', 'engine', size))
            if eng:
                d['dirty_engine_fraction_of_nt2'] = r3(med(t2) / med(eng))
        out['by_size'][str(size)] = d
    if sizes:
        last = out['by_size'][str(sizes[-1])]
        out['largest_mib'] = sizes[-1]
        out['speedup_vs_alloc'] = last.get('clean_speedup_vs_alloc')
        out['clean_engine_over_libxl'] = last.get('clean_engine_over_libxl')
        out['dirty_engine_over_libxl'] = last.get('dirty_engine_over_libxl')
        out['nt_parallel_ratio'] = last.get('nt_parallel_ratio')
        out['dirty_speedup_vs_alloc'] = last.get('dirty_speedup_vs_alloc')
    return out


def populate_text(p):
    lines = []
    for size in p['sizes_mib']:
        b = p['by_size'][str(size)]
        for mem in ('clean', 'dirty'):
            vs = p['variants'].get(mem, {})
            parts = []
            for var in ('engine', 'libxl', 'alloc'):
                e = vs.get(var, {}).get(str(size))
                if e:
                    parts.append('%s %.3f/%.3f ms (%d calls)' % (
                        var, e['best'] * 1e3, e['median'] * 1e3, e['calls']))
            lines.append('%6d MiB %-5s best/median: %s; libxl/engine %s%s' % (
                size, mem, ', '.join(parts),
                b.get('%s_engine_over_libxl' % mem),
                ', alloc/engine %s' % b['%s_speedup_vs_alloc' % mem]
                if '%s_speedup_vs_alloc' % mem in b else ''))
        n = p['nt'].get(str(size))
        if n:
            lines.append('%6d MiB NT zeroing 1 thread %.3f ms (%.1f GB/s), '
                         '2 threads %.3f ms (%.1f GB/s): ratio %s; dirty '
                         'engine at %s of 2 threads' % (
                             size, n['1']['median'] * 1e3,
                             n['gb_per_s_1_median'], n['2']['median'] * 1e3,
                             n['gb_per_s_2_median'], b.get('nt_parallel_ratio'),
                             b.get('dirty_engine_fraction_of_nt2')))
    return '\n'.join(lines)


# ------------------------------------------------------------------- scale

def scale(rows):
    builds = [r for r in rows if r['kind'] == 'build']
    out = {'variants': {}}
    for lab, var, name in (('batch', 'engine', 'engine'),
                           ('batch', 'libxl', 'libxl'),
                           ('alloc', 'libxl', 'alloc')):
        rs = [r for r in builds if r['label'] == lab and r['variant'] == var]
        if not rs:
            continue
        last = rs[-1]
        out['variants'][name] = {
            'total': stat([r['total_s'] for r in rs]),
            'populate': stat([r['populate_s'] for r in rs]),
            'calls': last['calls'], 'nodes': last['nodes'],
            'filter_evaluations': last['filter_evaluations'],
            'flushes_issued': last['flushes_issued'],
            'flushes_avoided': last['flushes_avoided']}
    v = out['variants']
    if 'engine' in v:
        out['post000_engine_seconds'] = r3(v['engine']['total']['median'])
    if 'alloc' in v:
        out['post000_alloc_seconds'] = r3(v['alloc']['total']['median'])
    if 'engine' in v and 'alloc' in v:
        out['alloc_over_engine'] = r3(v['alloc']['total']['median'] /
                                      v['engine']['total']['median'])
    return out


def scale_text(p):
    return '\n'.join(
        '135 GiB %-6s build %.4f s (best %.4f), populate %.4f s: %d calls, '
        '%d filter evaluations, %d flushes issued, %d avoided, %d node(s)' % (
            k, e['total']['median'], e['total']['best'],
            e['populate']['median'], e['calls'], e['filter_evaluations'],
            e['flushes_issued'], e['flushes_avoided'], e['nodes'])
        for k, e in p['variants'].items())


# ------------------------------------------------------------------- scrub

def scrub(rows):
    host = next((r for r in rows if r['kind'] == 'host'), {})
    sc = {r['round']: r for r in rows if r['kind'] == 'scrub'}
    nt = defaultdict(dict)
    for r in rows:
        if r['kind'] == 'nt':
            nt[r['round']][r['threads']] = r['seconds']
    w = host.get('workers', 1)
    gb = host.get('bytes', 0) / 1e9
    out = {'bytes': host.get('bytes'), 'workers': w,
           'hvsim': rstat([gb / r['seconds'] for r in sc.values()]),
           'nt': {str(k): rstat([gb / v[k] for v in nt.values() if k in v])
                  for k in sorted({k for v in nt.values() for k in v})}}
    fr = [nt[r][w] / sc[r]['seconds'] for r in sc if w in nt.get(r, {})]
    out['fraction_of_limit'] = r3(med(fr))
    out['fraction_of_limit_rounds'] = len(fr)
    out['inline_pages'] = sum(r['inline_pages'] for r in sc.values())
    numa = [r for r in rows if r['kind'] == 'numa']
    if numa and not numa[0]['available']:
        out['numa'] = {'available': False, 'reason': numa[0]['reason']}
    elif numa:
        loc = [r['bytes'] / 1e9 / r['seconds'] for r in numa
               if r['cpu_node'] == r['mem_node']]
        rem = [r['bytes'] / 1e9 / r['seconds'] for r in numa
               if r['cpu_node'] != r['mem_node']]
        out['numa'] = {'available': True, 'local': rstat(loc),
                       'remote': rstat(rem),
                       'local_over_remote': r3(ratio(med(loc), med(rem)))}
    return out


def scrub_text(p):
    t = ('scrub %.2f GB freed: hvsim %d workers %.2f GB/s (best %.2f); NT '
         'zeroing %s; hvsim / NT on %d threads = %s (median of %d rounds)' % (
             (p['bytes'] or 0) / 1e9, p['workers'], p['hvsim']['median'],
             p['hvsim']['best'], ', '.join('%s thread(s) %.2f GB/s' % (
                 k, v['median']) for k, v in p['nt'].items()),
             p['workers'], p['fraction_of_limit'],
             p['fraction_of_limit_rounds']))
    n = p.get('numa', {})
    if n.get('available'):
        t += '\nnode-local %.2f GB/s, remote %.2f GB/s: %s' % (
            n['local']['median'], n['remote']['median'],
            n['local_over_remote'])
    elif n:
        t += '\nnode-local against remote: not measured (%s)' % n['reason']
    return t


# --------------------------------------------------------------- buildscrub

def buildscrub(rows):
    builds = [r for r in rows if r['kind'] == 'build']
    out = {'variants': {}}
    for var in ('aware', 'unaware', 'wait'):
        rs = [r for r in builds if r['variant'] == var]
        if rs:
            out['variants'][var] = {
                'total': stat([r['total_s'] for r in rs]),
                'populate': stat([r['populate_s'] for r in rs]),
                'scrub_wait': stat([r['scrub_wait_s'] for r in rs]),
                'inline_pages_median': med([r['inline_pages'] for r in rs]),
                'nodes_used': sorted({r['first_node'] for r in rs}),
                'size_mib': rs[0]['size_mib']}
    v = out['variants']
    if 'aware' in v:
        for o in ('unaware', 'wait'):
            if o in v:
                out['%s_over_aware' % o] = r3(v[o]['total']['median'] /
                                              v['aware']['total']['median'])
    return out


def buildscrub_text(p):
    return '\n'.join(
        '%-8s time to a running guest %.1f ms (best %.1f), populate %.1f ms, '
        'waited %.1f ms, %d pages scrubbed inline, node %s' % (
            k, e['total']['median'] * 1e3, e['total']['best'] * 1e3,
            e['populate']['median'] * 1e3, e['scrub_wait']['median'] * 1e3,
            e['inline_pages_median'], e['nodes_used'])
        for k, e in p['variants'].items())


# ------------------------------------------------------------------ smallvms

def smallvms(rows):
    out = {}
    for lab in ('phantom', 'real'):
        for c in (1, 4):
            rs = [r for r in rows if r['kind'] == 'rpc' and
                  r['label'] == lab and r['clients'] == c]
            if rs:
                out['%s_%d' % (lab, c)] = {
                    'vms_per_s': rstat([r['rps'] for r in rs]),
                    'create_p50_ms': r3(med([r['p50_us'] for r in rs]) / 1e3),
                    'create_p99_ms': r3(med([r['p99_us'] for r in rs]) / 1e3),
                    'destroy_p50_ms': r3(med([r['destroy_p50_us']
                                              for r in rs]) / 1e3),
                    'errors': sum(r['errors'] for r in rs)}
    for c, key in ((1, 'create_destroy_per_s'),
                   (4, 'create_destroy_per_s_4_clients')):
        v = [r['rps'] for r in rows if r['kind'] == 'rpc' and
             r['label'] == 'phantom' and r['clients'] == c]
        if v:
            out[key] = r3(med(v))
            out[key + '_spread'] = spread(v)
    if 'real_1' in out:
        out['real_create_destroy_per_s'] = r3(
            out['real_1']['vms_per_s']['median'])
    return out


def smallvms_text(p):
    return '\n'.join(
        '%-10s %.0f VMs/s (best %.0f), create p50 %.2f ms p99 %.2f ms, '
        'destroy p50 %.2f ms' % (k, e['vms_per_s']['median'],
                                 e['vms_per_s']['best'], e['create_p50_ms'],
                                 e['create_p99_ms'], e['destroy_p50_ms'])
        for k, e in p.items() if isinstance(e, dict) and 'vms_per_s' in e)


# ------------------------------------------------------------------- control

def rounds_of(rpc, method, label, clients, field='rps'):
    """One figure's rounds, in the order run (round k is the k-th)."""
    return [r[field] for r in rpc if r['method'] == method and
            r['label'] == label and r['clients'] == clients]


def control_metrics(rpc, out):
    """The scrape figures: 1000 domains, gzip (as Prometheus asks)."""
    m = 'GET /metrics gzip'
    one = rounds_of(rpc, m, '1000', 1)
    hund = rounds_of(rpc, m, '1000', 100)
    p99 = [x / 1e3 for x in rounds_of(rpc, m, '1000', 100, 'p99_us')]
    if not one or not hund:
        return
    out['metrics_rps_1_client'] = r3(med(one))
    out['metrics_rps_1_client_spread'] = spread(one)
    out['metrics_rps_100_clients'] = r3(med(hund))
    out['metrics_rps_100_clients_spread'] = spread(hund)
    out['metrics_p99_ms_100_clients'] = r3(med(p99))
    out['metrics_p99_ms_100_clients_spread'] = spread(p99)
    # Paired by round: 100 scrapers over one, measured back to back.
    pr = [h / o for h, o in zip(hund, one) if o]
    out['metrics_100_over_1'] = r3(med(pr))
    out['metrics_100_over_1_spread'] = spread(pr)
    out['metrics_lost_connections'] = sum(
        r.get('lost', 0) for r in rpc if r['method'].startswith('GET'))


def control(rows):
    rpc = [r for r in rows if r['kind'] == 'rpc']
    out = {'figures': {}}
    for r in rpc:
        key = '%s|%s|%d' % (r['method'], r['label'], r['clients'])
        out['figures'].setdefault(key, []).append(r)
    summ = {}
    for key, rs in out['figures'].items():
        m, lab, c = key.split('|')
        summ.setdefault(m, {}).setdefault(lab, {})[c] = {
            'rps': rstat([r['rps'] for r in rs]),
            'p50_us': med([r['p50_us'] for r in rs]),
            'p99_us': med([r['p99_us'] for r in rs]),
            'reply_bytes': rs[-1]['reply_bytes']}
    out['summary'] = summ
    del out['figures']
    echo10 = [r['rps'] for r in rpc if r['method'] == 'echo' and
              r['clients'] == 10]
    out['echo_floor_rps'] = r3(med(echo10))
    control_metrics(rpc, out)
    vl = rounds_of(rpc, 'vm.list', '1000', 10)
    ec = rounds_of(rpc, 'echo', '1000', 10)
    if vl:
        out['vm_list_rps_1000vms_spread'] = spread(vl)
        out['vm_list_over_floor_spread'] = spread(
            [a / b for a, b in zip(vl, ec) if b])
    try:
        out['vm_list_rps_1000vms'] = r3(summ['vm.list']['1000']['10']['rps']
                                        ['median'])
        out['vm_list_over_floor'] = r3(out['vm_list_rps_1000vms'] /
                                       out['echo_floor_rps'])
        out['blob_floor_rps_1000vms'] = r3(summ['blob']['1000']['10']['rps']
                                           ['median'])
        out['vm_list_reply_bytes_1000vms'] = \
            summ['vm.list']['1000']['10']['reply_bytes']
        out['vm_list_over_blob_floor'] = r3(out['vm_list_rps_1000vms'] /
                                            out['blob_floor_rps_1000vms'])
    except (KeyError, TypeError, ZeroDivisionError):
        pass
    return out


def control_text(p):
    lines = []
    for m, labs in p['summary'].items():
        for lab, cs in sorted(labs.items(), key=lambda x: int(x[0])):
            lines.append('%-13s %4s domains: %s' % (m, lab, ', '.join(
                '%s clients %.0f/s (p99 %.0f us)' % (
                    c, e['rps']['median'], e['p99_us'])
                for c, e in sorted(cs.items(), key=lambda x: int(x[0])))))
    lines.append('vm.list, 1000 domains, 10 clients: %s of the echo floor '
                 '(%s/s), %s of the floor for replies of its size (%s bytes, '
                 '%s/s)' % (p.get('vm_list_over_floor'),
                            p.get('echo_floor_rps'),
                            p.get('vm_list_over_blob_floor'),
                            p.get('vm_list_reply_bytes_1000vms'),
                            p.get('blob_floor_rps_1000vms')))
    if 'metrics_rps_1_client' in p:
        lines.append('GET /metrics (gzip), 1000 domains: 1 client %s/s, 100 '
                     'clients %s/s (p99 %s ms), 100 over 1 per round %s; '
                     '%s connections closed by the server' % (
                         p['metrics_rps_1_client'],
                         p['metrics_rps_100_clients'],
                         p['metrics_p99_ms_100_clients'],
                         p['metrics_100_over_1'],
                         p['metrics_lost_connections']))
    return '\n'.join(lines)


# ------------------------------------------------------------------ unshadow

def unshadow(rows):
    sh = [r for r in rows if r['kind'] == 'shadow']
    out = {}
    for r in sh:
        t = 'off' if r['threshold'] >= 1000000 else str(r['threshold'])
        e = out.setdefault(r['pattern'], {}).setdefault(t, defaultdict(list))
        g = r['guest_writes']
        e['emulated_per_kwrite'].append(1e3 * r['emulated_writes'] / g)
        e['faults_per_kwrite'].append(1e3 * r['shadow_faults'] / g)
        e['unshadows_per_kwrite'].append(
            1e3 * (r['unshadow_write_flood'] + r['unshadow_early']) / g)
        # hvsim's own CPU time per guest write: what the model costs, not
        # what an emulated write costs a guest on Xen (a VM exit).
        e['model_ns_per_write'].append(1e9 * r['seconds'] / g)
    res = {}
    for pat, ts in out.items():
        res[pat] = {t: {k: r3(med(v)) for k, v in e.items()}
                    for t, e in ts.items()}
        for base in ('off', '2'):
            if base in res[pat] and '3' in res[pat]:
                b, t3 = res[pat][base], res[pat]['3']
                res[pat]['3_vs_%s' % base] = {
                    'emulated_avoided_per_kwrite': r3(
                        b['emulated_per_kwrite'] - t3['emulated_per_kwrite']),
                    'faults_avoided_per_kwrite': r3(
                        b['faults_per_kwrite'] - t3['faults_per_kwrite'])}
    return res


def unshadow_text(p):
    lines = []
    for pat, ts in p.items():
        for t in ('3', '2', 'off'):
            if t in ts:
                e = ts[t]
                lines.append('%-9s threshold %-3s per 1000 guest writes: %.1f '
                             'emulated, %.1f faults, %.1f unshadows' % (
                                 pat, t, e['emulated_per_kwrite'],
                                 e['faults_per_kwrite'],
                                 e['unshadows_per_kwrite']))
        for base in ('off', '2'):
            k = '3_vs_%s' % base
            if k in ts:
                lines.append('%-9s 3 against %s: %s emulated writes and %s '
                             'faults avoided per 1000 guest writes' % (
                                 pat, base,
                                 ts[k]['emulated_avoided_per_kwrite'],
                                 ts[k]['faults_avoided_per_kwrite']))
    return '\n'.join(lines)


SECTIONS = {
    'populate': (populate, populate_text),
    'scale': (scale, scale_text),
    'scrub': (scrub, scrub_text),
    'buildscrub': (buildscrub, buildscrub_text),
    'smallvms': (smallvms, smallvms_text),
    'control': (control, control_text),
    'unshadow': (unshadow, unshadow_text),
}


# ------------------------------------------------------------------ --all

# file name -> section name in latest.json
NAMES = (('populate', 'populate'), ('scale', 'scale'), ('scrub', 'scrub'),
         ('buildscrub', 'build_while_scrubbing'), ('smallvms', 'small_vms'),
         ('control', 'control'), ('unshadow', 'unshadow'))


def get(j, key):
    v = j
    for k in key.split('.'):
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return v


def verdict(value, op, bound, sp):
    """True, False, None (n/a) or 'unjudged: spread X'."""
    if value is None or bound is None:
        return None
    if sp and sp.get('spread') is not None and sp['spread'] > SPREAD_MAX \
            and sp['min'] <= bound <= sp['max']:
        return 'unjudged: spread %s' % sp['spread']
    return value >= bound if op == '>=' else value < bound


def targets(j):
    """The issue's targets: (key, value, op, bound, bound text)."""
    ntr = get(j, 'populate.nt_parallel_ratio')
    floor = get(j, 'control.echo_floor_rps')
    one = get(j, 'control.metrics_rps_1_client')
    t = [('populate.speedup_vs_alloc', '>=', 15, '15'),
         ('populate.clean_engine_over_libxl', '>=', 1.0,
          '1.0 (libxl\'s speed)'),
         ('populate.dirty_engine_over_libxl', '>=',
          0.9 * ntr if ntr else None,
          '0.9 x nt_parallel_ratio = %s (this run\'s NT zeroing scaling)' %
          r3(0.9 * ntr) if ntr else '?'),
         ('scrub.fraction_of_limit', '>=', 0.9, '0.9'),
         ('scale.post000_engine_seconds', '<', 20, '20 s'),
         ('small_vms.create_destroy_per_s', '>=', 1000, '1000'),
         ('small_vms.create_destroy_per_s_4_clients', '>=', 2000, '2000'),
         ('control.vm_list_rps_1000vms', '>=',
          0.5 * floor if floor else None,
          '0.5 x echo floor = %s' % r3(0.5 * floor) if floor else '?'),
         ('control.metrics_100_over_1', '>=', 1.0,
          '1.0 (100 scrapers at the single-client rate %s/s)' % one),
         ('control.metrics_p99_ms_100_clients', '<', 20, '20 ms')]
    out = []
    for key, op, bound, text in t:
        v = get(j, key)
        sp = get(j, key + '_spread')
        out.append({'key': key, 'value': v, 'target': '%s %s' % (op, text),
                    'spread': sp, 'met': verdict(v, op, bound, sp),
                    'remeasured': key.split('.')[0] in j.get('remeasured',
                                                             [])})
    return out


def fmt(v, nd=3):
    if v is None:
        return 'n/a'
    if isinstance(v, float):
        return ('%.' + str(nd) + 'g') % v if abs(v) < 1000 else '%.0f' % v
    return str(v)


def limits_text(j):
    """Which of this machine's limits applied to the run."""
    m, lim = j['machine'], j.get('limits', {})
    return ('Machine limits: %s CPUs (shared: load average %s at the start, '
            '%s at the end); NT zeroing scaled %s from 1 to 2 threads in this '
            'run (populate; the dirty-populate target is relative to it), '
            'scrub saw %s GB/s on 1 thread and %s on 2; '
            'net.unix.max_dgram_qlen %s; %s NUMA node(s).' % (
                m.get('nproc'), j['load']['start'], j['load']['end'],
                lim.get('nt_parallel_ratio'), lim.get('scrub_nt_1_gb_s'),
                lim.get('scrub_nt_2_gb_s'), m.get('max_dgram_qlen'),
                m.get('numa_nodes')))


def markdown(j):
    m = j['machine']
    L = ['# vmbuild benchmark results', '',
         'One run of `make bench` (%s, git %s): %d CPUs, %.1f GiB, kernel %s, '
         'THP %s; load average %s at the start, %s at the end; %d s.' % (
             j['date'], m.get('git'), m.get('nproc', 0),
             m.get('mem_total_kib', 0) / 1048576, m.get('kernel'),
             m.get('thp'), j['load']['start'], j['load']['end'],
             j['duration_s']),
         '', limits_text(j), '',
         'Each headline figure is the median of its rounds (interleaved '
         'with its baseline, ratios per round); its spread is min-max over '
         'the rounds and (max - min) / median; over %s, with the target '
         'inside min-max, the figure is unjudged (its benchmark is first '
         'measured once more).' % SPREAD_MAX,
         '', '| key | value | rounds: min - max (spread) | target | met |',
         '|---|---|---|---|---|']
    for t in j['targets']:
        sp = t.get('spread')
        met = t['met']
        L.append('| `%s` | %s | %s | %s | %s |' % (
            t['key'], fmt(t['value']),
            '%s - %s (%s), %d rounds%s' % (
                fmt(sp['min']), fmt(sp['max']), sp['spread'], sp['n'],
                ', re-measured' if t.get('remeasured') else '')
            if sp else 'n/a', t['target'],
            met if isinstance(met, str) else
            {True: 'yes', False: '**no**', None: 'n/a'}[met]))
    p = j.get('populate')
    if p and p.get('sizes_mib'):
        L += ['', '## Populate (median ms; best in brackets; calls)', '',
              '| guest | memory | engine | libxl | pre-4.8 (alloc) | '
              'libxl/engine | alloc/engine | NT 1 / 2 threads | '
              'NT ratio |', '|---|---|---|---|---|---|---|---|---|']
        for size in p['sizes_mib']:
            b = p['by_size'][str(size)]
            for mem in ('clean', 'dirty'):
                cells = []
                for var in ('engine', 'libxl', 'alloc'):
                    e = p['variants'].get(mem, {}).get(var, {}).get(str(size))
                    cells.append('%.3f (%.3f), %d' % (
                        e['median'] * 1e3, e['best'] * 1e3, e['calls'])
                        if e else 'n/a')
                n = p['nt'].get(str(size)) if mem == 'dirty' else None
                L.append('| %d GiB | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                    size // 1024, mem, cells[0], cells[1], cells[2],
                    fmt(b.get('%s_engine_over_libxl' % mem)),
                    fmt(b.get('%s_speedup_vs_alloc' % mem)),
                    '%.1f / %.1f' % (n['1']['median'] * 1e3,
                                     n['2']['median'] * 1e3) if n else '',
                    fmt(b.get('nt_parallel_ratio')) if n else ''))
    for name, text in (('scale', scale_text), ('scrub', scrub_text),
                       ('build_while_scrubbing', buildscrub_text),
                       ('small_vms', smallvms_text),
                       ('control', control_text),
                       ('unshadow', unshadow_text)):
        if j.get(name):
            L += ['', '## ' + name.replace('_', ' ').capitalize(), '', '```',
                  text(j[name]), '```']
    return '\n'.join(L) + '\n'


# Every plot twice: SVG for the README, PNG for anything that shows images.
TERMINALS = (('svg', 'set terminal svg size 900,480 dynamic enhanced '
              'font "sans,11"'),
             ('png', 'set terminal pngcairo size 900,480 enhanced '
              'font "sans,10"'))
SVG = '@TERMINAL@\nset grid\nset key top left\n'


def gnuplot(script, path):
    """Render `script` (which starts with SVG) to path's .svg and .png."""
    base = os.path.splitext(path)[0]
    made = []
    for ext, term in TERMINALS:
        out = '%s.%s' % (base, ext)
        text = script.replace('@TERMINAL@', '%s\nset output "%s"' % (
            term, out), 1)
        try:
            subprocess.run(['gnuplot'], input=text.encode(), check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            made.append(os.path.basename(out))
        except (OSError, subprocess.CalledProcessError) as e:
            print('report.py: gnuplot for %s: %s' % (out, getattr(
                e, 'stderr', b'').decode(errors='replace') or e),
                file=sys.stderr)
    return ', '.join(made) if made else None


def plot_populate(p, out):
    path = os.path.join(out, 'populate.svg')
    sc = [SVG, 'set multiplot layout 1,2',
          'set logscale xy 2', 'set xlabel "guest size (GiB)"',
          'set ylabel "populate (ms, median)"', 'set format y "%g"']
    for mem in ('clean', 'dirty'):
        blocks, plots = [], []
        lines = [('engine', 'engine', 'lc rgb "#1b9e77" lw 2 pt 7'),
                 ('libxl', "libxl's pattern", 'lc rgb "#d95f02" lw 2 pt 5'),
                 ('alloc', 'pre-4.8 (alloc)', 'lc rgb "#7570b3" lw 2 pt 9')]
        for var, title, style in lines:
            d = p['variants'].get(mem, {}).get(var, {})
            pts = ['%g %g' % (int(k) / 1024, v['median'] * 1e3)
                   for k, v in sorted(d.items(), key=lambda x: int(x[0]))]
            if pts:
                name = '$%s_%s' % (mem, var)
                blocks.append('%s << EOD\n%s\nEOD' % (name, '\n'.join(pts)))
                plots.append('%s with linespoints title "%s" %s' % (
                    name, title, style))
        if mem == 'dirty':
            for th, style in (('1', 'dt 2 lc rgb "#666666" lw 1.5'),
                              ('2', 'dt 3 lc rgb "#000000" lw 1.5')):
                pts = ['%g %g' % (int(k) / 1024, v[th]['median'] * 1e3)
                       for k, v in sorted(p['nt'].items(),
                                          key=lambda x: int(x[0]))]
                if pts:
                    name = '$nt%s' % th
                    blocks.append('%s << EOD\n%s\nEOD' % (name,
                                                          '\n'.join(pts)))
                    plots.append('%s with lines title "NT zeroing, %s '
                                 'thread%s" %s' % (name, th,
                                                   '' if th == '1' else 's',
                                                   style))
        if plots:
            sc += blocks
            sc.append('set title "%s memory%s"' % (
                mem, ' (background scrub off: zeroed inline)'
                if mem == 'dirty' else ''))
            sc.append('plot ' + ', '.join(plots))
    sc.append('unset multiplot')
    return gnuplot('\n'.join(sc) + '\n', path)


def plot_scrub(s, out):
    path = os.path.join(out, 'scrub.svg')
    bars = [('hvsim, %d scrub workers' % s['workers'], s['hvsim'])]
    for k, v in s['nt'].items():
        bars.append(('NT zeroing, %s thread%s' % (k, '' if k == '1' else 's'),
                     v))
    data = '\n'.join('"%s" %g %g' % (t, v['median'], v['best'])
                     for t, v in bars)
    sc = [SVG, 'set style data histogram',
          'set style histogram clustered gap 1', 'set style fill solid 0.7',
          'set boxwidth 0.8', 'set ylabel "GB/s"', 'set yrange [0:*]',
          'set title "Scrub: hvsim against this machine\'s zeroing limit '
          '(%.2f GB; median, best)"' % (s['bytes'] / 1e9),
          'set xtics rotate by -15', '$d << EOD', data, 'EOD',
          'plot $d using 2:xtic(1) title "median" lc rgb "#1b9e77", '
          '$d using 3 title "best" lc rgb "#a6dba0"']
    return gnuplot('\n'.join(sc) + '\n', path)


def plot_control(c, out):
    path = os.path.join(out, 'control.svg')
    sc = [SVG, 'set logscale xy', 'set xlabel "clients"',
          'set ylabel "requests/s (median)"', 'set xtics (1, 10, 100)',
          'set key outside right',
          'set title "Control plane (phantom memory)"']
    blocks, plots = [], []
    styles = {'vm.list': '#1b9e77', 'host.scrub': '#d95f02',
              'GET /metrics': '#7570b3', 'echo': '#000000',
              'blob': '#666666'}
    for m, labs in c['summary'].items():
        for lab, cs in sorted(labs.items(), key=lambda x: int(x[0])):
            if m == 'echo' and lab != '1000':
                continue
            pts = ['%s %g' % (k, v['rps']['median'])
                   for k, v in sorted(cs.items(), key=lambda x: int(x[0]))]
            name = '$%s_%s' % (''.join(ch for ch in m if ch.isalnum()), lab)
            blocks.append('%s << EOD\n%s\nEOD' % (name, '\n'.join(pts)))
            title = {'echo': 'echo floor',
                     'blob': 'floor, replies of vm.list\'s size'}.get(
                m, '%s, %s domains' % (m, lab))
            dt = '1' if lab == '1000' or m == 'echo' else '2'
            plots.append('%s with linespoints title "%s" lc rgb "%s" dt %s '
                         'lw 2' % (name, title, styles.get(m, '#999999'), dt))
    sc += blocks + ['plot ' + ', '.join(plots)]
    return gnuplot('\n'.join(sc) + '\n', path)


def write_all(raw, out):
    meta = load(os.path.join(raw, 'meta.jsonl'))
    host = next((r for r in meta if r['kind'] == 'host'), {})
    starts = [r for r in meta if r['kind'] != 'host' and 'loadavg' in r]
    j = {'date': subprocess.run(['date', '-u', '+%Y-%m-%dT%H:%M:%SZ'],
                                capture_output=True,
                                text=True).stdout.strip(),
         'machine': {k: v for k, v in host.items() if k != 'kind'},
         'duration_s': (starts[-1]['time'] - starts[0]['time'])
         if starts else None,
         'load': {'start': starts[0]['loadavg'] if starts else None,
                  'end': starts[-1]['loadavg'] if starts else None,
                  'samples': starts},
         'benchmarks': [r for r in meta if r['kind'] == 'bench']}
    rawall = {}
    for fname, name in NAMES:
        rows = load(os.path.join(raw, fname + '.jsonl'))
        if rows:
            j[name] = SECTIONS[fname][0](rows)
            rawall[name] = rows
    j['remeasured'] = sorted(
        name for fname, name in NAMES
        if os.path.exists(os.path.join(raw, fname + '.first.jsonl')))
    for fname, name in NAMES:
        first = load(os.path.join(raw, fname + '.first.jsonl'))
        if first:
            rawall[name + '_first_measure'] = first
    j['limits'] = {
        'nt_parallel_ratio': get(j, 'populate.nt_parallel_ratio'),
        'scrub_nt_1_gb_s': get(j, 'scrub.nt.1.median'),
        'scrub_nt_2_gb_s': get(j, 'scrub.nt.2.median')}
    j['targets'] = targets(j)
    j['raw'] = rawall
    os.makedirs(out, exist_ok=True)
    plots = []
    if j.get('populate', {}).get('sizes_mib'):
        plots.append(plot_populate(j['populate'], out))
    if j.get('scrub', {}).get('bytes'):
        plots.append(plot_scrub(j['scrub'], out))
    if j.get('control', {}).get('summary'):
        plots.append(plot_control(j['control'], out))
    j['plots'] = [p for p in plots if p]
    with open(os.path.join(out, 'latest.json'), 'w') as f:
        json.dump(j, f, indent=1, sort_keys=False)
        f.write('\n')
    md = markdown(j)
    with open(os.path.join(out, 'latest.md'), 'w') as f:
        f.write(md)
    print('\n'.join(md.splitlines()[:14]))
    print('report.py: wrote %s/latest.json, latest.md, %s' % (
        out, ', '.join(j['plots'])))
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == '--summary':
        fn, text = SECTIONS[argv[2]]
        print(text(fn(load(os.path.join(argv[3], argv[2] + '.jsonl')))))
        return 0
    if len(argv) == 4 and argv[1] == '--unjudged':
        fname = argv[2]
        name = dict(NAMES).get(fname)
        rows = load(os.path.join(argv[3], fname + '.jsonl'))
        if name is None or not rows:
            return 0
        j = {name: SECTIONS[fname][0](rows), 'machine': {}}
        for t in targets(j):
            if isinstance(t['met'], str):
                print(t['key'], t['met'])
        return 0
    if len(argv) == 4 and argv[1] == '--all':
        return write_all(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
