#!/usr/bin/env python3
"""Compare two e2e runs spec by spec: each spec's run time on both (from the ginkgo CLI's JSON
report that `scripts/conformance.sh run --report DIR` writes), the total of the specs' own run
times (which, unlike the suite's wall time, does not depend on how the parallel processes were
scheduled), and the specs whose time differs most.

Usage: compare.py REPORT_DIR_A REPORT_DIR_B [--top N]
Prints a Markdown table; the ratio is B / A.
"""
import argparse
import json
import os
import re
import sys


def specs(report_dir):
    path = os.path.join(report_dir, "report.json")
    try:
        with open(path) as f:
            suites = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"compare.py: {path}: {e}")
    times = {}
    for suite in suites:
        for spec in suite.get("SpecReports") or []:
            if spec.get("LeafNodeType") != "It" or spec.get("State") == "skipped":
                continue
            name = " ".join(spec.get("ContainerHierarchyTexts") or []) + " " + spec.get("LeafNodeText", "")
            # RunTime is in nanoseconds.
            times[name.strip()] = (spec.get("RunTime", 0) / 1e9, spec.get("State"))
    return times


def short(name, width=90):
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= width else name[: width - 1] + "…"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    a, b = specs(args.a), specs(args.b)
    both = sorted(set(a) & set(b))
    if not both:
        sys.exit("compare.py: the two runs share no spec")
    total_a = sum(a[n][0] for n in both)
    total_b = sum(b[n][0] for n in both)
    print(f"{len(both)} specs in both runs; specs' own run time, summed: "
          f"{total_a:.0f} s ({os.path.basename(args.a.rstrip('/'))}) / "
          f"{total_b:.0f} s ({os.path.basename(args.b.rstrip('/'))}) = {total_b / total_a:.3f}\n")
    rows = sorted(both, key=lambda n: b[n][0] - a[n][0], reverse=True)
    print("| spec | A s | B s | B − A s |")
    print("|---|---|---|---|")
    for n in rows[: args.top]:
        print(f"| {short(n)} | {a[n][0]:.1f} | {b[n][0]:.1f} | {b[n][0] - a[n][0]:+.1f} |")
    print("| … | | | |")
    for n in rows[-args.top // 3:]:
        print(f"| {short(n)} | {a[n][0]:.1f} | {b[n][0]:.1f} | {b[n][0] - a[n][0]:+.1f} |")
    only = sorted(set(a) ^ set(b))
    if only:
        print(f"\n{len(only)} specs ran in one run only.")


if __name__ == "__main__":
    main()
