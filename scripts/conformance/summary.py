#!/usr/bin/env python3
"""Summarize one e2e run from the ginkgo CLI's JSON report: passed, failed and skipped, per SIG,
the failures by name with the first line of their message, and the suite's wall time.

Writes REPORT/summary.md and REPORT/summary.json and prints the failures, then `N passed, N failed`
as the last line. With --expect FILE (one full test name a line, `#` comments), exits 1 when a
listed test did not pass, naming each; otherwise exits 1 when any test failed, none ran, or the
report is missing or unreadable.

Usage: summary.py REPORT_DIR --agent A --nodes N --wall-seconds S --selection TEXT [--expect FILE]
       summary.py --focus-of FILE    prints a ginkgo --focus that selects exactly FILE's tests
"""
import argparse
import json
import os
import re
import sys

FAILED = {"failed", "panicked", "interrupted", "timedout", "aborted"}


def die(msg):
    print(f"conformance/summary.py: error: {msg}", file=sys.stderr)
    print("0 passed, 0 failed")
    sys.exit(1)


def sig_of(name):
    m = re.search(r"\[(sig-[a-z-]+)\]", name)
    return m.group(1) if m else "(none)"


def first_line(spec):
    text = ((spec.get("Failure") or {}).get("Message") or "").strip()
    for line in text.splitlines():
        line = re.sub(r"^\[FAILED\]\s*", "", line.strip())
        if line:
            return line[:300]
    return ""


def load(report):
    """The specs of ginkgo's JSON report (REPORT/report.json), named as `e2e.test
    --list-tests` names them: the container texts and the spec's own, without labels."""
    path = os.path.join(report, "report.json")
    if not os.path.isfile(path):
        die(f"{path}: no ginkgo report (see {os.path.join(report, 'e2e.log')})")
    try:
        with open(path) as f:
            suites = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")
    specs, suite_failures = [], []
    for suite in suites:
        for spec in suite.get("SpecReports") or []:
            kind = spec.get("LeafNodeType", "")
            texts = [t for t in (spec.get("ContainerHierarchyTexts") or []) + [spec.get("LeafNodeText", "")] if t]
            name = " ".join(texts)
            status = spec.get("State", "")
            if kind != "It":
                if status in FAILED:
                    suite_failures.append({"name": f"[{kind}] {name}".strip(), "message": first_line(spec)})
                continue
            specs.append({
                "name": name, "sig": sig_of(name), "status": status,
                "seconds": (spec.get("RunTime") or 0) / 1e9,
                "message": first_line(spec) if status in FAILED else "",
            })
    return specs, suite_failures


def read_expectations(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]


def focus_of(path):
    """A ginkgo --focus expression that selects exactly the tests of an expectation file."""
    names = read_expectations(path)
    if not names:
        sys.exit(f"conformance/summary.py: {path} lists no test")
    # The text ginkgo matches has a prefix before the first container text: no `^`.
    return r"(?:^|\s)(?:" + "|".join(re.escape(n) for n in names) + ")$"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--focus-of":
        print(focus_of(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--wall-seconds", type=int, required=True)
    ap.add_argument("--selection", required=True)
    ap.add_argument("--expect")
    args = ap.parse_args()

    specs, suite_failures = load(args.report)
    ran = [s for s in specs if s["status"] != "skipped" and s["status"] != "pending"]
    passed = [s for s in ran if s["status"] == "passed"]
    failed = [s for s in ran if s["status"] in FAILED]
    skipped = [s for s in specs if s["status"] in ("skipped", "pending")]
    sigs = {}
    for s in ran:
        row = sigs.setdefault(s["sig"], {"passed": 0, "failed": 0})
        row["passed" if s["status"] == "passed" else "failed"] += 1

    summary = {
        "agent": args.agent, "nodes": args.nodes, "selection": args.selection,
        "wall_seconds": args.wall_seconds, "passed": len(passed), "failed": len(failed),
        "skipped": len(skipped), "per_sig": sigs, "suite_failures": suite_failures,
        "failures": [{"name": s["name"], "message": s["message"]} for s in failed],
        "passed_names": sorted(s["name"] for s in passed),
    }
    with open(os.path.join(args.report, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)

    md = [f"# e2e: {args.agent}, {args.nodes} node(s)", "",
          f"Selection: {args.selection}", "",
          f"**{len(passed)} passed, {len(failed)} failed**, {len(skipped)} not run (filtered out or skipped); wall time "
          f"{args.wall_seconds // 60} min {args.wall_seconds % 60} s.", "",
          "| SIG | passed | failed |", "|---|---|---|"]
    md += [f"| {sig} | {row['passed']} | {row['failed']} |" for sig, row in sorted(sigs.items())]
    if suite_failures:
        md += ["", "Suite-level failures:", ""] + [f"- {s['name']}: {s['message']}" for s in suite_failures]
    if failed:
        md += ["", "Failures:", ""] + [f"- {s['name']}: {s['message']}" for s in sorted(failed, key=lambda s: s["name"])]
    with open(os.path.join(args.report, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    for s in sorted(failed, key=lambda s: s["name"]):
        print(f"FAILED {s['name']}\n    {s['message']}")
    for s in suite_failures:
        print(f"SUITE FAILED {s['name']}\n    {s['message']}")
    print("per SIG: " + ", ".join(f"{sig} {r['passed']}/{r['passed'] + r['failed']}" for sig, r in sorted(sigs.items())))
    print(f"report: {os.path.join(args.report, 'summary.md')}; wall time {args.wall_seconds} s")

    rc = 0
    if args.expect:
        want = read_expectations(args.expect)
        got = {s["name"]: s["status"] for s in specs}
        for name in want:
            status = got.get(name, "not run")
            if status != "passed":
                print(f"EXPECTED TO PASS, {status}: {name}")
                rc = 1
        if not want:
            print(f"{args.expect}: lists no test")
            rc = 1
    elif not ran:
        print("no test ran")
        rc = 1
    elif failed or suite_failures:
        rc = 1
    print(f"{len(passed)} passed, {len(failed)} failed")
    sys.exit(rc)


if __name__ == "__main__":
    main()
