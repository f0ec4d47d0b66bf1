#!/usr/bin/env python3
"""Counts individual test cases over Meson test logs (testlog.json files).

TAP tests count their `ok` / `not ok` lines; a test that printed `1..0 #
SKIP` counts as one skipped; a test that crashed or timed out counts as
one failure on top of its cases.  Prints a summary per log and a final
line 'N passed, N failed, N skipped'.  Exits 1 if anything failed or no
test ran."""
import json
import re
import sys

total = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        print(f"{path}: missing (build failed?)")
        total["failed"] += 1
        continue
    for line in lines:
        t = json.loads(line)
        out = t.get("stdout", "") or ""
        res = t.get("result", "")
        oks = len(re.findall(r"^ok \d+", out, re.M))
        skips = len(re.findall(r"^ok \d+.*# SKIP", out, re.M))
        nots = len(re.findall(r"^not ok \d+", out, re.M))
        if res == "SKIP":
            counts["skipped"] += 1
            continue
        counts["passed"] += oks - skips
        counts["skipped"] += skips
        counts["failed"] += nots
        if res not in ("OK", "EXPECTEDFAIL") and nots == 0:
            counts["failed"] += 1
            print(f"  {t.get('name')}: {res}")
        elif res == "OK" and oks == 0:
            counts["passed"] += 1  # a non-TAP test that passed
    print(f"{path}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    for k in total:
        total[k] += counts[k]
print(f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
sys.exit(1 if total["failed"] or total["passed"] == 0 else 0)
