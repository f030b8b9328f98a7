#!/usr/bin/env python3
"""Sets the real server's overload timeline (bench/cpu_quota_test.sh) beside the
simulator's for the same workload (the calibration points) and checks the
acceptance: every level change within 1 s (the real server's at the times its log
gives), and moves a second while saturated within 20 %. Usage: calibrate.py REAL_TIMELINE SIM_OUTPUT LOAD_SECS
Prints a markdown table and one verdict line; exit status 0 either way (figures)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from calibrate_rows import (  # noqa: E402
    changes, rate, real_changes, real_rows, saturated, sim_changes, sim_rows)


def main():
    real, sim, load = real_rows(sys.argv[1]), sim_rows(sys.argv[2]), float(sys.argv[3])
    print("| t (s) | real level | real CPU | real moves | sim level | sim CPU | sim moves |")
    print("|---:|---|---:|---:|---|---:|---:|")
    for i in range(max(len(real), len(sim))):
        r = real[i] if i < len(real) else None
        s = sim[i] if i < len(sim) else None
        cells = [f"{(r or s)['t']:.0f}"]
        for x in (r, s):
            cells += [x["level"], f"{x['cpu']:.2f}", str(x["moves"])] if x else ["", "", ""]
        print("| " + " | ".join(cells) + " |")
    rc, sc = real_changes(sys.argv[1]), sim_changes(sys.argv[2]) or changes(sim)
    worst = 0.0
    ok = len(rc) == len(sc)
    for (a, ta), (b, tb) in zip(rc, sc):
        ok &= a == b
        worst = max(worst, abs(ta - tb))
    sat = saturated(real, load)
    rate_r, rate_s = rate(real, sat), rate(sim, sat)
    diff = (rate_s - rate_r) / rate_r if rate_r else float("nan")
    ok &= worst <= 1.0 and abs(diff) <= 0.20
    print()
    print(f"level changes: real {rc}; sim {sc}; worst gap {worst:.2f} s")
    print(f"moves/s while saturated ({len(sat)} s): real {rate_r:.0f}, sim {rate_s:.0f}, sim/real {1 + diff:.2f}")
    print("verdict:", "AGREE" if ok else "DIFFER")


main()
