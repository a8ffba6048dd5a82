#!/usr/bin/env python3
"""xenresults.py - bench/xen-results.py on saved lab console excerpts.

tests/lab/xenbench-logs/ holds console excerpts in the lab's format (the
records tests/lab/xenbench.sh prints, time-stamped by run.sh, some lines
ending in CRs as dom0's hvc0 gives them):

  stock.log      three create rounds, vmbuild's second dropped for the
                 emulated CPU's triple fault, a record echoed inside a
                 step's output (not a record), the dirty sequence on stock
                 Xen (vmctl stats unavailable), LAB-HOST
  companion.log  the dirty sequence on the companion, its counters around
                 each create, one guest's hello line missing, vmbuild's
                 build record (XBINFO) of one create, and one cut short,
                 dom0's CPU and steal around three creates
  limits.log     a dirty sequence with the records that bound vmbuild's
                 figure: its first guest over clean memory (clean=1)
                 and two creates with vmbuildd kept to one CPU (vmb1cpu)
  cut.log        a run cut short after xl's first create: vmbuild's
                 figures missing
  run-2d38e64.log  the records of a real lab run (make check-xen), one
                 of vmbuild's rounds dropped for a real triple fault
  createcpu.log  two create rounds per tool with the CPU each spent to
                 its line (one of vmbuild's without vmbuildd's figure)
  saverestore.log  the saverestore step's first lines (one ok=no)
  saverestore-rounds.log  its first line (the engine the default, the
                 other reader's restore failed) and three rounds,
                 vmbuild's two readers apart, one of the engine's failed

Checked: medians, spreads and ratios of the counted figures only; the
dropped round and the missing figures said, their ratios null; the dirty
time from the host's timestamps; the companion's scrubbed-inline pages
and flushes as differences; the JSON's keys; judge.sh printing the lines.
"""
import json
import os
import subprocess
import sys
import tempfile

top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(top, 'bench'))
logs = os.path.join(top, 'tests', 'lab', 'xenbench-logs')
script = os.path.join(top, 'bench', 'xen-results.py')
n = 0
failed = 0


def check(ok, what, detail=''):
    global n, failed
    n += 1
    if ok:
        print('ok %d - %s' % (n, what))
    else:
        failed += 1
        print('not ok %d - %s' % (n, what))
        for line in str(detail).splitlines():
            print('#   ' + line)


def dig(j, *keys):
    for k in keys:
        j = j.get(k) if isinstance(j, dict) else None
    return j


def run(*args):
    p = subprocess.run([sys.executable, script] + list(args),
                       capture_output=True, text=True, cwd=top)
    return p.returncode, p.stdout, p.stderr


def log(name):
    return os.path.join(logs, name)


# The summary lines judge.sh prints, for the stock run alone.
rc, out, err = run('--summary', log('stock.log'))
lines = out.splitlines()
check(rc == 0, 'summary of stock.log exits 0', err)
want = ('vmbuild-xen-create: rounds=3 xl_return=22[21.6-24.7] '
        'vmb_return=16.1[13.9-18.3] return_ratio=0.732 '
        'xl_line=43.1[42-44.5] vmb_line=38.3[34.1-42.5] line_ratio=0.889 '
        'load=2.15-3.4/2cpu')
check(want in lines, 'create line: medians, min-max, ratios of the counted '
      'rounds (the echoed record and the dropped round left out)', out)
check('  create rounds dropped, not counted: vmb round 2 (triple-fault)'
      in lines, 'the dropped round is said', out)
want = ('vmbuild-xen-dirty: xen=stock xl=13.5[12.5-14.5] vmb=8.5[8-9] '
        'ratio=0.63 scrubbed_inline=na flushes=na mb=2288 hogs=0 filled=0 '
        'load=2.15-3.4/2cpu')
check(want in lines, 'dirty line on stock: times from the host\'s '
      'timestamps (MARK begin to the (dN) hello line), counters na', out)

# A real run's records (make check-xen at 2d38e64, 2026-12-02): vmbuild's
# third round triple-faulted under emulation; returns from the steps'
# MARK lines (timed), not the records' return= (which adds the printing
# of the command's output).
rc, out, err = run('--summary', log('run-2d38e64.log'))
lines = out.splitlines()
check(lines == [
    'vmbuild-xen-create: rounds=3 xl_return=18.5[17.57-18.77] '
    'vmb_return=15.88[14.69-17.06] return_ratio=0.858 '
    'xl_line=37.48[36.49-39.34] vmb_line=35.5[33.24-37.75] '
    'line_ratio=0.947 load=2.05-3.25/2cpu',
    '  create rounds dropped, not counted: vmb round 3 (triple-fault)',
    'vmbuild-xen-dirty: xen=stock xl=1.09[0.78-1.4] vmb=0.8[0.79-0.82] '
    'ratio=0.734 scrubbed_inline=na flushes=na mb=2368 hogs=0 filled=0 '
    'load=2.05-3.25/2cpu'], 'a real run\'s excerpt: its lines (no hogs= '
    'in its records: an idle host)', out)

# The CPU to the line: medians per tool; vmbuild's toolstack CPU is
# vmctl's and vmbuildd's, and a round without vmbuildd's figure ("-")
# gives none (not 0).
rc, out, err = run('--summary', log('createcpu.log'))
lines = out.splitlines()
check(rc == 0 and '  create CPU to the line (medians, s): '
      'toolstack_cpu=xl:9.3[9.1-9.5],vmb:5.5[5.5-5.5]; '
      'guest_cpu=xl:30[29.5-30.5],vmb:35[34-36]; '
      'dom0_cpu=xl:20[19.9-20.1],vmb:11.8[11.3-12.3]; '
      'dom0_steal=xl:39[38-40],vmb:29[28-30]; '
      'xenstored_cpu=xl:1.05[1-1.1],vmb:0.65[0.6-0.7]; '
      'vmbuildd_cpu=xl:0.25[0.2-0.3],vmb:5.4[5.4-5.4]' in lines,
      'create CPU line: medians, vmbuild\'s toolstack CPU vmctl + '
      'vmbuildd, none where vmbuildd\'s is missing', out)
rc, out, err = run('--summary', log('stock.log'))
check(not any('create CPU' in l for l in out.splitlines()),
      'no CPU line for records without CPU figures (older logs)', out)

# The companion: counters as differences, one figure missing.
rc, out, err = run('--summary', log('companion.log'))
lines = out.splitlines()
want = ('vmbuild-xen-dirty: xen=companion xl=21[20-22] vmb=8[8-8] '
        'ratio=0.381 scrubbed_inline=xl:590000,vmb:0 flushes=xl:4,vmb:1 '
        'mb=2048 hogs=4 filled=1 load=5-7.25/2cpu')
check(want in lines, 'dirty line on the companion: the counters\' '
      'differences around each create, and its busy host', out)
check('  dirty companion missing figure: vmb seq 2 line' in lines,
      'the missing hello line is said', out)
check('  dirty companion dropped, not counted: vmb seq 5 (triple-fault)'
      in lines, 'a create the emulated CPU\'s triple fault ended is said '
      'and not counted (vmb=8[8-8] above)', out)
check('  dirty companion vmb profile (medians): create=0.6 populate=1.5 '
      'boot=0.7 workers=4 worker_longest=1.5 worker_busy=5.4 extents_1g=0 '
      'extents_split=0 hypervisor=1.08 cpu_wait=0.21 serial=0 before=- kept=- '
      'parallelism=3.6 in_hypervisor=0.2' in lines,
      'vmbuild\'s profile from its XBINFO record (a cut one ignored), with '
      'the share of its workers\' time spent in Xen and the steal that '
      'decided their count', out)
check('  dirty companion dom0 CPU to the return: xl=3[2.9-3.1] '
      'vmb=1.5[1.5-1.5] vmb1cpu=- cpu_ratio=0.5; steal xl=10.5[9-12] '
      'vmb=2.5[2.5-2.5]' in lines,
      'the CPU dom0 used for each create and its vCPUs\' wait, medians '
      'per tool (the record without them left out), and their ratio', out)
check(not any(x.startswith('vmbuild-xen-create') for x in lines),
      'no create line for a log without create rounds', out)

# The limits: the clean create and the one-CPU create kept out of the
# dirty figures, and what they bound.
rc, out, err = run('--summary', log('limits.log'))
lines = out.splitlines()
check('vmbuild-xen-dirty: xen=companion xl=10[10-10] vmb=8[8-8] ratio=0.8 '
      'scrubbed_inline=xl:500000,vmb:500000 flushes=na mb=2048 hogs=4 '
      'filled=1 load=-' in lines, 'the clean and one-CPU creates are not '
      'dirty figures of vmbuild', out)
check('  dirty companion limits: vmb_clean_line=3[3-3] clean_floor_ratio=0.3 '
      'vmb_clean_populate=0.2[0.2-0.2] vmb_one_cpu_line=11[10-12] '
      'one_cpu_populate=6[5-7] workers_populate=4[4-4] workers_gain=1.5'
      in lines, 'the limits line: the clean floor over xl\'s median, the '
      'workers\' gain over one CPU (medians of the one-CPU creates)', out)
check('  dirty companion target 0.5: fixed_s=4 populate_budget_s=1 '
      'needed_mib_s=2048 one_cpu_mib_s=341 workers_mib_s=512' in lines,
      'the scrub rate the target asks for (0.5 x xl\'s 10 s less vmbuild\'s '
      '4 s outside populate: 2048 MiB in 1 s) beside what the host gave',
      out)
with tempfile.TemporaryDirectory() as d:
    rc, _, err = run('--out', os.path.join(d, 'x.json'), log('limits.log'))
    lim = json.load(open(os.path.join(d, 'x.json')))['dirty']['companion'] \
        .get('limits', {}) if rc == 0 else {}
    check(dig(lim, 'vmb_clean', 'scrubbed_inline', 'values') == [0] and
          dig(lim, 'vmb_one_cpu', 'scrubbed_inline', 'values') ==
          [500000, 500000] and lim.get('one_cpu_line_over_vmb') == 1.38,
          'the limits in the JSON, with their own counters', lim or err)
with tempfile.TemporaryDirectory() as d:
    # xl's line 7 s: 0.5 of it is less than vmbuild's 4 s outside populate.
    fast = os.path.join(d, 'fast-xl.log')
    with open(log('limits.log')) as f, open(fast, 'w') as g:
        g.write(f.read().replace('[ 130.00] (d4)', '[ 127.00] (d4)'))
    rc, out, err = run('--summary', fast)
    check('  dirty companion target 0.5: fixed_s=4 populate_budget_s=-0.5 '
          'needed_mib_s=unreachable one_cpu_mib_s=341 workers_mib_s=512'
          in out.splitlines(), 'fixed costs alone over the target: '
          '"unreachable", not a rate', out)
rc, out, err = run('--summary', log('companion.log'))
check('limits' not in out, 'a log without them: no limits line', out)

# A run cut short: vmbuild's figures missing, the ratios null.
rc, out, err = run('--summary', log('cut.log'))
check('vmbuild-xen-create: rounds=1 xl_return=21.6[21.6-21.6] vmb_return=- '
      'return_ratio=- xl_line=42[42-42] vmb_line=- line_ratio=- load=-'
      in out.splitlines(), 'a missing tool: its figures "-", ratios "-"',
      out)

# The results file.
with tempfile.TemporaryDirectory() as d:
    out_json = os.path.join(d, 'sub', 'xen.json')
    rc, out, err = run('--commit', 'abc1234', '--out', out_json,
                       log('stock.log'), log('companion.log'),
                       log('absent.log'))
    check(rc == 0 and os.path.exists(out_json), 'results written', out + err)
    j = json.load(open(out_json)) if os.path.exists(out_json) else {}
    check(j.get('create_return_ratio') == 0.732 and
          j.get('create_line_ratio') == 0.889,
          'create ratios in the JSON', j.get('create'))
    check(j.get('dirty_ratio_stock') == 0.63 and
          j.get('dirty_ratio_companion') == 0.381,
          'dirty ratios in the JSON', j.get('dirty'))
    check('restore_ratio' in j and j['restore_ratio'] is None,
          'restore_ratio present and null without a saverestore line')
    check(j.get('commit') == 'abc1234' and j.get('date'),
          'commit and date', (j.get('commit'), j.get('date')))
    xl = (j.get('create') or {}).get('xl') or {}
    check(xl.get('return', {}).get('values') == [21.6, 24.7, 22.0] and
          xl.get('line', {}).get('min') == 42.0,
          'raw times and spreads kept', xl)
    host = j.get('host') or {}
    check(host.get(log('stock.log')) == {'load_start': 2.15, 'load_end': 3.4,
                                         'cpus': 2.0},
          'host load per log', host)
    check(j.get('missing_logs') == [log('absent.log')] and
          'no log ' + log('absent.log') in out,
          'an absent log is said, not fatal', out)

# The saverestore step's lines: the restore times of the run that said
# ok=yes; a run that did not is listed, not counted.
with tempfile.TemporaryDirectory() as d:
    out_json = os.path.join(d, 'xen.json')
    rc, out, err = run('--out', out_json, log('saverestore.log'))
    j = json.load(open(out_json)) if os.path.exists(out_json) else {}
    rs = j.get('restore') or {}
    check(j.get('restore_ratio') == round(46.17 / 42.32, 3) and
          rs.get('runs') == 2 and (rs.get('xl') or {}).get('values') == [42.32]
          and (rs.get('vmb') or {}).get('values') == [46.17],
          'restore_ratio from the ok=yes line only', rs)
    check(len(rs.get('failed', [])) == 1 and 'ok=no' in rs['failed'][0],
          'the ok=no run is listed as failed', rs)
rc, out, err = run('--summary', log('saverestore.log'))
check('vmbuild-xen-restore: runs=2 xl=42.32[42.32-42.32] '
      'vmb=46.17[46.17-46.17] ratio=1.091 mb=256 default=libxenguest '
      'libxenguest=46.17[46.17-46.17] engine=- ratio_libxenguest=1.091 '
      'ratio_engine=-' in out.splitlines(),
      'the restore line in the summary', out + err)

# The rounds (saverestore-rounds.log, the first line and three rounds of
# the three restores back to back, one of the engine's failed): each
# reader apart, the default's median over xl's the ratio.
with tempfile.TemporaryDirectory() as d:
    out_json = os.path.join(d, 'xen.json')
    rc, out, err = run('--out', out_json, log('saverestore-rounds.log'))
    j = json.load(open(out_json)) if os.path.exists(out_json) else {}
    rs = j.get('restore') or {}
    vals = {t: (rs.get(t) or {}).get('values') for t in
            ('xl', 'libxenguest', 'engine', 'vmb')}
    check(vals == {'xl': [7.77, 7.1, 7.5, 7.3],
                   'libxenguest': [5.2, 5.4, 5.3],
                   'engine': [5.25, 4.9, 5.0],
                   'vmb': [5.25, 4.9, 5.0]} and rs.get('default') == 'engine'
          and rs.get('rounds') == 3,
          'the rounds counted per reader, the default (engine) as vmb', rs)
    check(j.get('restore_ratio') == round(5.0 / 7.4, 3) and
          rs.get('ratio_libxenguest') == round(5.3 / 7.4, 3) and
          rs.get('ratio_engine') == round(5.0 / 7.4, 3),
          'restore ratios: the default\'s and each reader\'s', rs)
    check(any('round engine failed' in f for f in rs.get('failed', [])) and
          any('ok_libxenguest=no' in f for f in rs.get('failed', [])),
          'the failed round and the other reader\'s failed restore listed',
          rs)

# judge.sh shows the lines in its summary (it fails the excerpt: no run).
p = subprocess.run([os.path.join(top, 'tests', 'lab', 'judge.sh'),
                    log('stock.log')], capture_output=True, text=True,
                   cwd=top)
check('vmbuild-xen-create: rounds=3 ' in p.stdout and
      'host (QEMU start, end): load_start=2.15 load_end=3.4 cpus=2'
      in p.stdout, 'judge.sh prints the side-by-side lines and the load',
      p.stdout[-3000:])

print('1..%d' % n)
sys.exit(1 if failed else 0)
