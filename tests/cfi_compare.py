#!/usr/bin/env python3
"""Compares `hprof table` with `readelf --debug-dump=frames-interp`, row by row.

For every row readelf prints (LOC, CFA, rbp, ra, rbx) the rule hprof's table gives for LOC must
say the same thing; the gap after each FDE that no other FDE fills must find no rule; and
every row hprof prints must start at a location readelf also knows (a row start, an FDE
start or an FDE end). readelf is the independent oracle: nothing here reads hprof's code.

Vocabulary (readelf -> what hprof must print):
  CFA  rsp+N / rbp+N / rbx+N / r10+N / r12+N..r15+N -> the same
       rK+N (other reg)     -> ?cfa-register
       exp                  -> the kind of the expression `readelf -wf` shows there:
                               the PLT expression with DW_OP_litN -> exp:pltN,
                               DW_OP_breg7 N; DW_OP_deref -> exp:*(rsp+N), breg6 -> rbp,
                               anything else -> ?expression
  rbp  (no column), s       -> s            (unchanged)
       u                    -> s or u       (readelf prints u both for "not saved yet"
                                             and for DW_CFA_undefined)
       c+N / v+N            -> the same
       exp                  -> exp:rsp+N for DW_OP_breg7 N, exp:rbp+N for DW_OP_breg6 N,
                               else ?expression
       vexp                 -> ?val-expression;  a register name -> ?register
  ra   (no column)          -> c-8          (the x86-64 psABI's rule)
       c+N, u               -> the same
       exp                  -> exp:rsp+N for DW_OP_breg7 N, else ?expression;  vexp, v+N, s -> ?val-expression,
                               ?val-offset, ?same-value
       rK (name)            -> rK           (DW_CFA_register: the return address is in rK)
  rbx  (no column), s       -> s
       u                    -> s or u       (as for rbp)
       c-N                  -> c-N when N is 8k with k in 1..253 (the row's byte), else ?
       anything else        -> ?
Overlapping FDEs: ordered by start (then section order), each one's rows stop where the
next one starts; that is also the order .eh_frame_hdr's binary search implies.

Usage: cfi_compare.py HPROF FILE...   Prints one summary line per file with problems and a
total line "files N rows N gaps N mismatches N errors N skipped N"; exits 1 on any
mismatch or error.
"""
import bisect
import os
import re
import subprocess
import sys

ROW_RE = re.compile(r'^([0-9a-f]{16}) (.*)$')
ENTRY_RE = re.compile(r'^([0-9a-f]{8}) [0-9a-f]+ [0-9a-f]+ (CIE|FDE)(.*)$')
FDE_RE = re.compile(r'cie=([0-9a-f]+|invalid\s*) pc=([0-9a-f]+)\.\.([0-9a-f]+)')
SECTION_RE = re.compile(r'^Contents of the (\.eh_frame|\.debug_frame) section')
PLT_RE = re.compile(r'^DW_OP_breg7 \(rsp\): 8; DW_OP_breg16 \(rip\): 0; DW_OP_lit15; '
                    r'DW_OP_and; DW_OP_lit(\d+); DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus$')
DEREF_RE = re.compile(r'^DW_OP_breg([67]) \((rbp|rsp)\): (-?\d+); DW_OP_deref$')
BREG_RE = re.compile(r'^DW_OP_breg([67]) \((rbp|rsp)\): (-?\d+)$')
REG_RE = re.compile(r'^r\d+$')


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def split_row(rest):
    """readelf prints DW_CFA_register as 'r3 (rbx)': keep it one token."""
    out = []
    for tok in rest.split():
        if tok.startswith('(') and out:
            out[-1] += ' ' + tok
        else:
            out.append(tok)
    return out


class Entry:
    def __init__(self, off, kind):
        self.off = off
        self.kind = kind
        self.cie = None
        self.lo = self.hi = 0
        self.cols = []
        self.rows = []   # (loc, {col: value})


def parse_interp(text):
    """readelf -wF -> {section: [Entry]}"""
    sections = {}
    cur = None
    entry = None
    for line in text.splitlines():
        m = SECTION_RE.match(line)
        if m:
            cur = sections.setdefault(m.group(1), [])
            entry = None
            continue
        if cur is None:
            continue
        m = ENTRY_RE.match(line)
        if m:
            entry = Entry(int(m.group(1), 16), m.group(2))
            if entry.kind == 'FDE':
                f = FDE_RE.search(m.group(3))
                if not f:
                    entry = None
                    continue
                c = f.group(1).strip()
                entry.cie = None if c == 'invalid' else int(c, 16)
                entry.lo, entry.hi = int(f.group(2), 16), int(f.group(3), 16)
            cur.append(entry)
            continue
        if entry is None:
            continue
        if line.startswith('   LOC'):
            entry.cols = line.split()[2:]
            continue
        m = ROW_RE.match(line)
        if m:
            toks = split_row(m.group(2))
            vals = {'CFA': toks[0]}
            for name, v in zip(entry.cols, toks[1:]):
                vals[name] = v
            entry.rows.append((int(m.group(1), 16), vals))
    return sections


def parse_raw(text):
    """readelf -wf -> {section: {FDE offset: ([(loc, snapshot)], ra column)}} where a
    snapshot holds the expression texts in force for the CFA, rbp and ra (None when the
    rule is not an expression)."""
    orders = {}
    order = None
    entry_ops = None
    for line in text.splitlines():
        m = SECTION_RE.match(line)
        if m:
            order = orders.setdefault(m.group(1), [])
            entry_ops = None
            continue
        if order is None:
            continue
        m = ENTRY_RE.match(line)
        if m:
            entry_ops = []
            cie, lo = None, 0
            if m.group(2) == 'FDE':
                f = FDE_RE.search(m.group(3))
                if f and f.group(1).strip() != 'invalid':
                    cie, lo = int(f.group(1).strip(), 16), int(f.group(2), 16)
            order.append([int(m.group(1), 16), m.group(2), cie, lo, entry_ops, 16])
            continue
        s = line.strip()
        if entry_ops is None:
            continue
        if s.startswith('DW_CFA_'):
            entry_ops.append(s)
        elif s.startswith('Return address column'):
            order[-1][5] = int(s.split(':')[1])
    sections = {}
    for name, order in orders.items():
        cur = sections[name] = {}
        cies = {}
        for off, kind, cie, lo, ops, ra in order:
            if kind == 'CIE':
                state = {'cfa': None, 6: None, ra: None}
                replay(ops, state, None, ra, 0)
                cies[off] = (state, ra)
            else:
                base, ra = cies.get(cie, ({'cfa': None, 6: None, 16: None}, 16))
                snaps = []
                replay(ops, dict(base), snaps, ra, lo, base)
                cur[off] = (snaps, ra)
    return sections


OP_RE = re.compile(r'^(DW_CFA_\w+)(?::\s*|\s*)(.*)$')
TO_RE = re.compile(r'to ([0-9a-f]+)$')
REGOP_RE = re.compile(r'^r(\d+)')
EXPR_RE = re.compile(r'\((DW_OP.*)\)$')


def replay(ops, state, snaps, ra, loc, cie_state=None):
    stack = []
    for op in ops:
        m = OP_RE.match(op)
        name, arg = m.group(1), m.group(2)
        if name.startswith('DW_CFA_advance_loc') or name == 'DW_CFA_MIPS_advance_loc8':
            t = TO_RE.search(arg)
            if snaps is not None:
                snaps.append((loc, dict(state)))
            if t:
                loc = int(t.group(1), 16)
        elif name == 'DW_CFA_set_loc':
            if snaps is not None:
                snaps.append((loc, dict(state)))
            loc = int(arg.split()[0], 16)
        elif name == 'DW_CFA_def_cfa_expression':
            e = EXPR_RE.search(op)
            state['cfa'] = e.group(1) if e else ''
        elif name in ('DW_CFA_def_cfa', 'DW_CFA_def_cfa_sf', 'DW_CFA_def_cfa_register'):
            state['cfa'] = None
        elif name == 'DW_CFA_remember_state':
            stack.append(dict(state))
        elif name == 'DW_CFA_restore_state':
            if stack:
                state.clear()
                state.update(stack.pop())
        else:
            r = REGOP_RE.match(arg)
            if not r:
                continue
            reg = int(r.group(1))
            if reg not in (6, ra):
                continue
            if name == 'DW_CFA_expression':
                e = EXPR_RE.search(op)
                state[reg] = e.group(1) if e else ''
            elif name in ('DW_CFA_restore', 'DW_CFA_restore_extended'):
                state[reg] = cie_state.get(reg) if cie_state else None
            else:
                state[reg] = None
    if snaps is not None:
        snaps.append((loc, dict(state)))


def snapshot_at(raw, loc):
    """The expression texts in force at loc: the last snapshot taken at or before loc."""
    if raw is None:
        return {}
    snaps, _ = raw
    best = {}
    for l, s in snaps:
        if l <= loc:
            best = s
    return best


def expect_cfa(v, snap):
    if v == 'exp':
        x = snap.get('cfa')
        if x is None:
            return {'?expression'}
        m = PLT_RE.match(x)
        if m:
            return {'exp:plt%d' % int(m.group(1))}
        m = DEREF_RE.match(x)
        if m:
            return {'exp:*(%s%+d)' % (m.group(2), int(m.group(3)))}
        return {'?expression'}
    m = re.match(r'^(\w+)([+-]\d+)$', v)
    if m and m.group(1) in ('rsp', 'rbp', 'rbx', 'r10', 'r12', 'r13', 'r14', 'r15'):
        return {'%s%+d' % (m.group(1), int(m.group(2)))}
    return {'?cfa-register'}


def expect_reg(v, is_ra, snap, reg):
    if v is None:
        return {'c-8'} if is_ra else {'s'}
    if v == 'u':
        return {'u'} if is_ra else {'s', 'u'}
    if v == 's':
        return {'?same-value'} if is_ra else {'s'}
    if v.startswith('c'):
        return {'c%+d' % int(v[1:])}
    if v.startswith('v') and v != 'vexp':
        return {'?val-offset'} if is_ra else {'v%+d' % int(v[1:])}
    if v == 'exp':
        x = snap.get(reg)
        m = BREG_RE.match(x) if x else None
        if m and (m.group(2) == 'rsp' or not is_ra):
            return {'exp:%s%+d' % (m.group(2), int(m.group(3)))}
        return {'?expression'}
    if v == 'vexp':
        return {'?val-expression'}
    m = re.match(r'^r(\d+)\b', v)
    if is_ra and m and int(m.group(1)) <= 127:
        return {'r%d' % int(m.group(1))}
    return {'?register'}


RBX_SLOTS = 253


def expect_rbx(v):
    if v is None or v == 's':
        return {'s'}
    if v == 'u':
        return {'s', 'u'}
    m = re.match(r'^c([+-]\d+)$', v)
    if m:
        off = int(m.group(1))
        if off < 0 and off % 8 == 0 and off >= -8 * RBX_SLOTS:
            return {'c%+d' % off}
    return {'?'}


def parse_hprof(text):
    pcs, vals = [], []
    for line in text.splitlines():
        m = ROW_RE.match(line)
        if not m:
            continue
        toks = m.group(2).split()
        pcs.append(int(m.group(1), 16))
        vals.append(None if toks[0] == 'end' else toks)
    return pcs, vals


def compare_section(path, hprof, section, entries, raw, totals, problems):
    rc, out, err = run([hprof, 'table', '--section', section.lstrip('.'), path])
    if rc != 0:
        problems.append('%s %s: hprof failed: %s' % (path, section, err.strip()))
        totals['errors'] += 1
        return
    pcs, vals = parse_hprof(out)
    cies = {e.off: e for e in entries if e.kind == 'CIE'}
    fdes = [e for e in entries if e.kind == 'FDE']
    fdes.sort(key=lambda e: e.lo)   # stable: section order breaks ties
    known = set()

    def lookup(loc):
        i = bisect.bisect_right(pcs, loc) - 1
        return None if i < 0 else vals[i]

    for i, f in enumerate(fdes):
        hi = f.hi
        touches = i + 1 < len(fdes) and fdes[i + 1].lo <= hi
        if touches:
            hi = fdes[i + 1].lo
        if f.lo >= hi:
            continue
        known.add(f.lo)
        known.add(hi)
        rows = f.rows
        if not rows:
            # readelf prints nothing for an FDE whose program is all DW_CFA_nop: the
            # CIE's initial rules, its last printed row, apply from the start
            cie = cies.get(f.cie)
            if cie is None or not cie.rows:
                continue
            rows = [(f.lo, cie.rows[-1][1])]
        last = {}
        for loc, v in rows:
            if f.lo <= loc < hi:
                last[loc] = v          # a zero advance: the later row wins
        fraw = raw.get(f.off) if raw is not None else None
        ra_reg = fraw[1] if fraw else 16
        for loc in sorted(last):
            v = last[loc]
            known.add(loc)
            totals['rows'] += 1
            snap = snapshot_at(fraw, loc) if raw is not None else {}
            want = (expect_cfa(v['CFA'], snap), expect_reg(v.get('rbp'), False, snap, 6),
                    expect_reg(v.get('ra'), True, snap, ra_reg), expect_rbx(v.get('rbx')))
            got = lookup(loc)
            if got is None or len(got) < 4 or any(g not in w for g, w in zip(got, want)):
                totals['mismatches'] += 1
                if len(problems) < 40:
                    problems.append('%s %s FDE 0x%x loc 0x%x: readelf %s %s %s %s -> want %s, hprof %s'
                                    % (path, section, f.off, loc, v['CFA'], v.get('rbp', '-'),
                                       v.get('ra', '-'), v.get('rbx', '-'),
                                       [sorted(w) for w in want], got))
        if not touches:
            totals['gaps'] += 1
            if lookup(hi) is not None:
                totals['mismatches'] += 1
                if len(problems) < 40:
                    problems.append('%s %s FDE 0x%x: pc 0x%x after the FDE finds a rule %s'
                                    % (path, section, f.off, hi, lookup(hi)))
    for pc in pcs:
        if pc not in known:
            totals['mismatches'] += 1
            if len(problems) < 40:
                problems.append('%s %s: hprof row at 0x%x where readelf has no row' % (path, section, pc))


def compare_file(hprof, path):
    totals = {'files': 0, 'rows': 0, 'gaps': 0, 'mismatches': 0, 'errors': 0, 'skipped': 0}
    problems = []
    rc, out, err = run(['readelf', '-wF', path])
    sections = parse_interp(out)
    sections = {k: v for k, v in sections.items() if any(e.kind == 'FDE' for e in v)}
    if not sections:
        return totals, problems
    rc, hdr, _ = run(['readelf', '-h', path])
    if 'REL (Relocatable file)' in hdr or 'Advanced Micro Devices X86-64' not in hdr \
            or 'ELF64' not in hdr:
        totals['skipped'] += 1
        problems.append('%s: skipped (%s)' % (path, 'relocatable object' if 'REL (' in hdr
                                               else 'not an x86-64 ELF64 file'))
        return totals, problems
    raw = {}
    if re.search(r'\bv?exp\b', out):
        raw = parse_raw(run(['readelf', '-wf', path])[1])
    totals['files'] += 1
    for section, entries in sections.items():
        compare_section(path, hprof, section, entries, raw.get(section, {}), totals, problems)
    return totals, problems


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    hprof = sys.argv[1]
    files = sys.argv[2:]
    jobs = int(os.environ.get('CFI_JOBS', os.cpu_count() or 1))
    totals = {'files': 0, 'rows': 0, 'gaps': 0, 'mismatches': 0, 'errors': 0, 'skipped': 0}
    if jobs > 1 and len(files) > 1:
        from multiprocessing import Pool
        with Pool(jobs) as pool:
            results = pool.starmap(compare_file, [(hprof, f) for f in files], chunksize=1)
    else:
        results = [compare_file(hprof, f) for f in files]
    for t, probs in results:
        for k in totals:
            totals[k] += t[k]
        for p in probs:
            print(p)
    print('files %(files)d rows %(rows)d gaps %(gaps)d mismatches %(mismatches)d '
          'errors %(errors)d skipped %(skipped)d' % totals)
    return 1 if totals['mismatches'] or totals['errors'] else 0


if __name__ == '__main__':
    sys.exit(main())
