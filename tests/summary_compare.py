#!/usr/bin/env python3
"""Checks that hprof's --json summary says what its text summary on stderr says.

Usage: summary_compare.py [--brief] SUMMARY.json STDERR.txt
Every figure of the text summary (hprof -v) is read back from its line and compared with the
JSON's (percentages as the text rounds them). With --brief, the default summary's: the
samples, the complete stacks and the two commonest reasons of the others, and a line of
what was lost exactly when anything was. Prints one "ok - ..." / "not ok - ..." line per
figure compared and exits 1 when any differs or a line is missing.
"""
import json
import re
import sys


def main():
    brief = sys.argv[1] == "--brief"
    args = sys.argv[2:] if brief else sys.argv[1:]
    data = json.load(open(args[0]))
    text = open(args[1]).read()
    failed = 0

    def check(name, want, got):
        nonlocal failed
        if want == got:
            print(f"ok - summary: {name} = {got}")
        else:
            print(f"not ok - summary: {name}: text says {want}, JSON says {got}")
            failed += 1

    def line(pattern):
        m = re.search(pattern, text, re.M)
        if not m:
            print(f"not ok - summary: no line matching /{pattern}/ in the text")
            sys.exit(1)
        return m

    if brief:
        compare_brief(data, text, check, line)
        sys.exit(1 if failed else 0)

    pct = lambda v: f"{v:.1f}"
    m = line(r"^hprof: ([0-9.]+) s, (\d+) samples at (\d+) Hz, (\d+) processes, (\d+) distinct stacks")
    check("duration", m[1], f"{data['duration_s']:.2f}")
    check("samples", int(m[2]), data["samples"])
    check("frequency", int(m[3]), data["frequency_hz"])
    check("processes", int(m[4]), data["processes"])
    check("distinct stacks", int(m[5]), data["distinct_stacks"])

    m = line(r"^hprof: FP-complete: ([0-9.]+)% of user stacks \((\d+) of (\d+)\); (\d+) "
             r"kernel-only samples \((\d+) in execve or exit\)")
    check("FP-complete share", m[1], pct(data["fp_complete"]["percent"]))
    check("FP-complete count", int(m[2]), data["fp_complete"]["count"])
    check("user stacks", int(m[3]), data["user_samples"])
    check("kernel-only samples", int(m[4]), data["kernel_only_samples"])
    check("kernel-only in execve or exit", int(m[5]), data["kernel_only_in_execve_or_exit"])

    m = line(r"^hprof: user stacks by method: (.*) \(FP chains finished from their end: (\d+) by "
             r"the DWARF walk, (\d+) with the thread's learned frames; deep stacks walked across "
             r"their copy's gap by learned frames: (\d+)\)")
    for name, value in re.findall(r"(\S+) ([0-9.]+)%", m[1]):
        check(f"method {name}", value, pct(data["user_stacks_by_method"][name]["percent"]))
    check("FP chains finished by DWARF", int(m[2]), data["fp_chains_finished_by_dwarf"])
    check("FP chains finished with learned frames", int(m[3]),
          data["fp_chains_finished_with_learned_frames"])
    check("gaps crossed by learned frames", int(m[4]), data["gaps_crossed_by_learned_frames"])

    m = re.search(r"^hprof: truncated stacks:(.*)$", text, re.M)
    listed = dict(re.findall(r" (\[[^\]]*\]) (\d+);", m[1])) if m else {}
    for reason, count in data["truncated_by_reason"].items():
        check(f"truncated {reason}", int(listed.get(reason, 0)), count)

    m = line(r"^hprof: lost samples: (\d+) \(ring buffer full (\d+), no scratch buffer (\d+), "
             r"malformed (\d+)\); not recorded: idle (\d+), other processes (\d+)")
    lost = data["lost_samples"]
    for i, key in enumerate(["total", "ring_buffer_full", "no_scratch_buffer", "malformed"]):
        check(f"lost samples {key}", int(m[i + 1]), lost[key])
    check("not recorded idle", int(m[5]), data["not_recorded"]["idle"])
    check("not recorded other processes", int(m[6]), data["not_recorded"]["other_processes"])

    m = line(r"^hprof: lost frames: (\d+) FP chains ended on unreadable memory, (\d+) frames "
             r"outside any mapping, (\d+) samples whose process maps were gone; (\d+) FP chains "
             r"left the thread's stack")
    frames = data["lost_frames"]
    check("lost frames FP unreadable", int(m[1]), frames["fp_chain_unreadable"])
    check("lost frames outside mappings", int(m[2]), frames["outside_any_mapping"])
    check("lost frames maps gone", int(m[3]), frames["process_maps_gone"])
    check("lost frames FP off stack", int(m[4]), frames["fp_chain_off_stack"])

    m = line(r"^hprof: mappings: (\d+) mmap, (\d+) exec, (\d+) fork, (\d+) exit events; (\d+) "
             r"processes read from /proc; (\d+) mapping events lost")
    ev = data["mapping_events"]
    for i, key in enumerate(["mmap", "exec", "fork", "exit", "processes_read_from_proc", "lost"]):
        check(f"mapping events {key}", int(m[i + 1]), ev[key])

    m = line(r"^hprof: ([0-9]+) bytes received per sample")
    check("bytes per sample", m[1], f"{data['bytes_per_sample']:.0f}")
    m = re.search(r"stack copies: (\d+) to the thread's learned base, (\d+) to the end of the "
                  r"stack, (\d+) of the leaf only \(the FP chain sufficed\), (\d+) cut short by a "
                  r"failed read, (\d+) failed, (\d+) with unreadable pages left as holes, (\d+) deeper "
                  r"than the copy or off the thread's stack \((\d+) off it\), sent with the window "
                  r"below the thread's base; (\d+) "
                  r"from a signal's alternate stack, (\d+) of them without the interrupted stack "
                  r"\(no signal frame found\); windows at the FP chain's end: (\d+) sent, (\d+) "
                  r"unreadable", text)
    if m or not data["frame_pointers_only"]:
        if not m:
            line(r"stack copies: ")  # reports the missing line and exits
        sc = data["stack_copies"]
        for i, key in enumerate(["to_learned_base", "to_end_of_stack", "leaf_only", "cut_short",
                                 "failed", "with_holes", "with_base_window",
                                 "off_thread_stack", "from_alternate_stack",
                                 "signal_frame_not_found", "fp_end_windows_sent",
                                 "fp_end_windows_unreadable"]):
            check(f"stack copies {key}", int(m[i + 1]), sc[key])
    m = re.search(r"^hprof: stack deltas: (\d+) rebuilt, (\d+) whole copies, (\d+) lost for a "
                  r"missing base, (\d+) malformed", text, re.M)
    if m or "stack_deltas" in data:
        if not m:
            line(r"^hprof: stack deltas: ")  # reports the missing line and exits
        sd = data["stack_deltas"]
        for i, key in enumerate(["deltas", "whole_copies", "base_missing", "malformed"]):
            check(f"stack deltas {key}", int(m[i + 1]), sd[key])
    sys.exit(1 if failed else 0)


def compare_brief(data, text, check, line):
    m = line(r"^hprof: .* for ([0-9.]+) s: (\d+) samples? at (\d+) Hz(?: in (\d+) process(?:es)?)?")
    check("duration", m[1], f"{data['duration_s']:.2f}")
    check("samples", int(m[2]), data["samples"])
    check("frequency", int(m[3]), data["frequency_hz"])
    check("processes", int(m[4] or 0), data["processes"])

    user = data["user_samples"]
    truncated = data["user_stacks_by_method"]["truncated"]["count"]
    if not user:
        check("no complete line without user stacks",
              re.search(r"^hprof: .*user stacks complete", text, re.M), None)
    elif not truncated:
        m = line(r"^hprof: (?:all (\d+) user stacks|the only user stack is) complete$")
        check("user stacks, all complete", int(m[1] or 1), user)
    else:
        m = line(r"^hprof: (\d+) of (\d+) user stacks complete \(([0-9.]+)%\); the others: (.*)$")
        check("complete stacks", int(m[1]), user - truncated)
        check("user stacks", int(m[2]), user)
        check("complete share, rounded down", m[3], f"{int(100.0 * (user - truncated) / user * 10) / 10:.1f}")
        listed = re.findall(r"(?:^|, )([^,]*?) (\d+)(?=,|$)", m[4])
        reasons = {k[len("[truncated: "):-1]: v for k, v in data["truncated_by_reason"].items() if v}
        top = sorted(reasons.values(), reverse=True)[:2]
        named = [(r, int(n)) for r, n in listed if r != "other reasons"]
        check("reasons named: the two commonest", sorted((n for _, n in named), reverse=True), top)
        for r, n in named:
            check(f"truncated {r}", n, reasons.get(r))
        others = sum(reasons.values()) - sum(n for _, n in named)
        check("other reasons", dict(listed).get("other reasons", "0"), str(others))

    lost = data["lost_samples"]
    m = re.search(r"^hprof: lost(.*)$", text, re.M)
    anything = lost["total"] or data["mapping_events"]["lost"] or \
        data["not_recorded"]["children_not_followed"]
    check("a lost line exactly when anything was lost", bool(m), bool(anything))
    if m:
        said = lambda pattern: int(re.search(pattern, m[1])[1]) if re.search(pattern, m[1]) else 0
        check("lost samples", said(r"^ (\d+) samples?"), lost["total"])
        check("lost, ring buffer full", said(r"ring buffer full (\d+)"), lost["ring_buffer_full"])
        check("lost, no scratch buffer", said(r"no scratch buffer (\d+)"), lost["no_scratch_buffer"])
        check("lost, malformed", said(r"malformed (\d+)"), lost["malformed"])
        check("lost mapping events", said(r"(\d+) mapping events?"), data["mapping_events"]["lost"])
        check("children not followed", said(r"(\d+) child process"),
              data["not_recorded"]["children_not_followed"])


main()
