#!/usr/bin/python3
"""Checks the data of a --report-memory=html page against the text report
of the same plan: report-memory-html.test.

Usage: html-plan.py PAGE.html REPORT.txt
"""
import json
import re
import sys

page = open(sys.argv[1]).read()
text = open(sys.argv[2]).read()
found = re.search(r'<script type="application/json" id="plan">(.*?)</script>', page, re.S)
assert found, "no plan data in the page"
plan = json.loads(found.group(1))
state = sum(plan["state"])
totals = [state + sum(t) for t in plan["timeline"]]
peak = max(totals)
want = int(re.search(r"peak \(training step\) .* (\d+) bytes", text).group(1))
assert peak == want, (peak, want)
print(f"peak {peak} bytes = the text report's")
assert totals[plan["peakAt"]] == peak, (plan["peakAt"], totals.index(peak))
print(f"peak at op {plan['peakAt']}, the timeline's largest")
allocated = int(re.search(r"allocated \(state \+ arena\) .* (\d+) bytes", text).group(1))
assert plan["allocated"] == allocated, (plan["allocated"], allocated)
counts = {}
for g in plan["gemms"]:
    counts[g["precision"]] = counts.get(g["precision"], 0) + 1
recomputed = sum(g["recomputed"] for g in plan["gemms"])
assert recomputed == len(plan["recomputed"]), plan["recomputed"]
print(f"GEMMs: {len(plan['gemms'])} (" +
      ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
      f"), recomputed {recomputed}")
assert len(plan["ops"]) == len(plan["timeline"])
assert all(len(t) == len(plan["categories"]) for t in plan["timeline"])
print(f"categories: {len(plan['categories'])}, timeline: {len(plan['timeline'])} ops")
sizes = [b["bytes"] for b in plan["atPeak"]]
assert sizes and sizes == sorted(sizes, reverse=True), sizes
assert sum(sizes) <= sum(plan["timeline"][plan["peakAt"]]), (sum(sizes), plan["peakAt"])
print(f"live at the peak: {len(sizes)} buffers, largest first, within the peak's scratch")
