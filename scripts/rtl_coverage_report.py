#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-module line and toggle coverage of the kernel's RTL.

Usage: rtl_coverage_report.py MERGED.dat HW_RTL_DIR

Reads a Verilator coverage file (verilator_coverage --write), adds each
point's counts over every instance and every test, and reports, for each
file of HW_RTL_DIR/kernel_sources.txt:
  - line coverage: of the source lines that carry line or branch points,
    the share whose points were all reached;
  - toggle coverage: the share of signal bits that toggled.
Lines no test reached are listed. Ends with FIGURE lines.
"""
import collections
import os
import sys


def read_points(path):
    """(file, line, kind, name) -> count, summed over instances."""
    points = collections.Counter()
    with open(path, encoding="utf-8", errors="replace") as data:
        for entry in data:
            if not entry.startswith("C '"):
                continue
            keys, _, count = entry[3:].rstrip("\n").rpartition("' ")
            fields = dict(item.split("\x02", 1) for item in keys.split("\x01") if "\x02" in item)
            kind = fields.get("page", "").split("/", 1)[0]  # v_line, v_branch, v_toggle
            key = (os.path.basename(fields.get("f", "")), int(fields.get("l", 0)), kind,
                   fields.get("o", "") + "@" + fields.get("n", ""))
            points[key] += int(count)
    return points


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    points = read_points(sys.argv[1])
    with open(os.path.join(sys.argv[2], "kernel_sources.txt"), encoding="utf-8") as listing:
        modules = [name.strip() for name in listing if name.strip()]

    lines = collections.defaultdict(lambda: True)  # (file, line) -> every point reached
    toggles = collections.Counter()  # file -> toggle points
    toggles_hit = collections.Counter()  # file -> toggle points reached
    for (name, line, kind, _), count in points.items():
        if kind in ("v_line", "v_branch"):
            lines[(name, line)] &= count > 0
        elif kind == "v_toggle":
            toggles[name] += 1
            toggles_hit[name] += count > 0

    print(f"{'module':34} {'lines':>13} {'line %':>7} {'toggle %':>9}")
    all_lines = all_hit = all_toggles = all_toggles_hit = 0
    missed = []
    for name in modules:
        mine = {line: hit for (file, line), hit in lines.items() if file == name}
        hit = sum(mine.values())
        all_lines += len(mine)
        all_hit += hit
        all_toggles += toggles[name]
        all_toggles_hit += toggles_hit[name]
        line_share = f"{100.0 * hit / len(mine):.1f}" if mine else "-"
        toggle_share = f"{100.0 * toggles_hit[name] / toggles[name]:.1f}" if toggles[name] else "-"
        print(f"{name:34} {hit:>6} / {len(mine):<4} {line_share:>7} {toggle_share:>9}")
        missed += [(name, line) for line, reached in sorted(mine.items()) if not reached]
    if missed:
        print("\nLines no test reached:")
        for name, line in missed:
            with open(os.path.join(sys.argv[2], name), encoding="utf-8") as source:
                text = source.read().splitlines()[line - 1].strip()
            print(f"  {name}:{line}: {text}")
    print(f"FIGURE rtl_line_coverage {100.0 * all_hit / max(all_lines, 1):.1f} % "
          f"({all_hit} of {all_lines} lines of the kernel's modules)")
    print(f"FIGURE rtl_toggle_coverage {100.0 * all_toggles_hit / max(all_toggles, 1):.1f} % "
          f"({all_toggles_hit} of {all_toggles} signal bits)")


if __name__ == "__main__":
    main()
