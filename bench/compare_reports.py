#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare the explain reports of a scenario suite run in two trace modes (issue 33).

usage: bench/compare_reports.py DIR_A DIR_B [--points 2]

DIR_A and DIR_B hold the reports a suite wrote with GPUWHY_TEST_REPORT_DIR (tests/support/
scenario.hpp), e.g. the adaptive default and GPUWHY_TEST_TRACE_FLAGS=--full. For every report
name in both: the verdict's severity and title, the top chain's kind, culprit (by name: pids
differ between runs) and share, and the budget of the top chain's thread (or of the first
budget), bucket by bucket. A share or bucket further apart than --points percentage points is a
difference. Prints one table row per report and a summary; exit status 1 when any differs.
"""
import json
import os
import sys


def top(report):
    chains = report.get("chains") or []
    return chains[0] if chains else None


def culprit_name(chain):
    c = chain.get("culprit") if chain else None
    return c.get("comm") if isinstance(c, dict) else None


def budget_of(report, chain):
    budgets = report.get("budgets") or []
    if chain and isinstance(chain.get("thread"), dict):
        for b in budgets:
            if b["thread"]["tid"] == chain["thread"]["tid"]:
                return b
    return budgets[0] if budgets else None


def bucket_shares(budget):
    return {l["bucket"]: l["share"] for l in budget["buckets"]} if budget else {}


def verdict_head(report):
    v = report.get("verdict", "")
    return v.split(":")[0] + ":" + (v.split(":")[1] if ":" in v else "")


def main():
    args = sys.argv[1:]
    points = 2.0
    if "--points" in args:
        i = args.index("--points")
        points = float(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    a_dir, b_dir = args
    names = sorted(set(os.listdir(a_dir)) & set(os.listdir(b_dir)))
    differ = 0
    print("| report | verdict | top chain | culprit | share A / B | largest bucket gap | same |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in names:
        ra = json.load(open(os.path.join(a_dir, n)))
        rb = json.load(open(os.path.join(b_dir, n)))
        ta, tb = top(ra), top(rb)
        same = verdict_head(ra) == verdict_head(rb)
        kind = (ta or {}).get("kind"), (tb or {}).get("kind")
        same = same and kind[0] == kind[1] and culprit_name(ta) == culprit_name(tb)
        sa = 100 * (ta or {}).get("share", 0)
        sb = 100 * (tb or {}).get("share", 0)
        same = same and abs(sa - sb) <= points
        ba, bb = bucket_shares(budget_of(ra, ta)), bucket_shares(budget_of(rb, tb))
        gap, gap_bucket = 0.0, "-"
        for k in set(ba) | set(bb):
            g = 100 * abs(ba.get(k, 0) - bb.get(k, 0))
            if g > gap:
                gap, gap_bucket = g, k
        same = same and gap <= points
        differ += not same
        k = kind[0] if kind[0] == kind[1] else f"{kind[0]} / {kind[1]}"
        c = culprit_name(ta) if culprit_name(ta) == culprit_name(tb) else \
            f"{culprit_name(ta)} / {culprit_name(tb)}"
        print(f"| {n[:-5]} | {verdict_head(ra)} | {k} | {c} | {sa:.1f} / {sb:.1f} | "
              f"{gap:.1f} ({gap_bucket}) | {'yes' if same else '**no**'} |")
    only = sorted(set(os.listdir(a_dir)) ^ set(os.listdir(b_dir)))
    print(f"\n{len(names)} reports compared, {differ} differ (more than {points} points or "
          f"another verdict, kind or culprit); {len(only)} in one directory only")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
