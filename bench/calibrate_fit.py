#!/usr/bin/env python3
"""Fits the simulator's calibration figures to the real server's measurements at the
calibration points and writes fixtures/sim-calibration.json (bench/calibrate.sh).

Usage: calibrate_fit.py OUT_DIR SIM_BIN LOAD_SECS POINT...
  OUT_DIR holds <point>.real.<k>.txt and .log, the real server's timeline and log
  (bench/cpu_quota_test.sh) of its k-th run (k = 1, 2, ...; or one run, <point>.real.txt)
  for each POINT, a scenario name in fixtures/scenarios (calib_<quota>_<games>_ai<0|1>).

Each point's real figures are the medians over its runs (the saturated moves a second,
the share of search decisions, each level change's time), so that one run disturbed by
the host moves nothing; the run whose moves a second is the median gives the seconds
"saturated" and the timeline set beside the simulator's.

The figures are fitted by running the simulator with candidate figures (the
scenario's `cost`) and the server's default store (SQLite) against the real server's,
by the secant method: `fallback_move_us` to the saturated moves a second of the points
with EMBEDDED_AI=0; at the points with 1, one factor on both embedded decision figures
to the share of decisions the primary agent (search) made and the level changes'
times, and for each factor tried `ai_embedded_answer_us` (the core thread's share of
an answer, which paces the games when the workers keep up) to the saturated moves a
second and the time the load's games took, half each: the factor is the one, of a
grid and its refinement, with the least sum over the points of the squared errors,
each in units of its bound (search share 25 %, level change 1 s, moves a second
20 %). The idle floors are the real server's CPU in the quiet end of the recovery,
with EMBEDDED_AI=1 (the default) and 0. The file records the commit measured (git
HEAD)."""
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
FILE = os.path.join(ROOT, "fixtures", "sim-calibration.json")
sys.path.insert(0, os.path.dirname(__file__))
from calibrate_rows import (  # noqa: E402
    changes, rate, real_changes, real_rows, saturated, sim_changes, sim_rows)


def work_s(rows, load, share=0.95):
    """When the load's work was done: the time, interpolated within its second, by
    which `share` of the moves made during the load had been made. Every point's
    workload is a fixed number of games, so a server that plays them faster ends them
    sooner and recovers sooner; moves a second averaged over the saturated seconds
    also count the seconds in which the last games end."""
    moves = [(r["t"], r["moves"]) for r in rows if r["t"] <= load]
    target = share * sum(m for _, m in moves)
    done = 0
    for t, m in moves:
        if m > 0 and done + m >= target:
            return t - 1 + (target - done) / m
        done += m
    return load


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def search_share(text, pattern):
    """The share of the embedded AI's decisions the primary agent (search) made, per
    mille: the real server's from bench/cpu_quota_test.sh's log, the simulator's from
    its report; None when the text does not say."""
    m = re.search(pattern, text)
    return int(m[1]) if m else None


REAL_SHARE = r"\((\d+) per mille\)"
SIM_SHARE = r'"ai_embedded_search_per_mille": (\d+)'


def real_point(out_dir, p, load):
    """The medians of a point's real runs: moves a second while saturated, search
    share, the time of each level change (over the runs whose changes are the same
    sequence as most runs'), and the median run's rows and saturated seconds."""
    files = sorted(glob.glob(os.path.join(out_dir, p + ".real.[0-9]*.txt")),
                   key=lambda f: int(f.rsplit(".", 2)[-2]))
    if not files:
        files = [os.path.join(out_dir, p + ".real.txt")]
    runs = []
    for f in files:
        rows = real_rows(f)
        log = f[:-4] + ".log"
        text = open(log).read() if os.path.exists(log) else ""
        secs = saturated(rows, load)
        runs.append({"rows": rows, "secs": secs, "moves": rate(rows, secs),
                     "work_s": work_s(rows, load),
                     "share": search_share(text, REAL_SHARE), "changes": real_changes(f, log)})
    for r, f in zip(runs, files):
        r["file"] = f
    by_moves = sorted(runs, key=lambda r: r["moves"])
    mid = by_moves[(len(by_moves) - 1) // 2]
    if mid["file"] != os.path.join(out_dir, p + ".real.txt"):
        # The median run's timeline, set beside the simulator's (bench/calibrate.py).
        shutil.copyfile(mid["file"], os.path.join(out_dir, p + ".real.txt"))
        if os.path.exists(mid["file"][:-4] + ".log"):
            shutil.copyfile(mid["file"][:-4] + ".log", os.path.join(out_dir, p + ".real.log"))
    kinds = [tuple(c for c, _ in r["changes"]) for r in runs]
    common = max(set(kinds), key=kinds.count)
    same = [r for r, k in zip(runs, kinds) if k == common]
    times = [median([r["changes"][i][1] for r in same]) for i in range(len(common))]
    shares = [r["share"] for r in runs if r["share"]]
    return {
        "rows": mid["rows"],
        "secs": mid["secs"],
        "moves": median([r["moves"] for r in runs]),
        "moves_each": [round(r["moves"]) for r in runs],
        "work_s": median([r["work_s"] for r in runs]),
        "work_s_each": [round(r["work_s"], 2) for r in runs],
        "share": median(shares) if shares else None,
        "shares_each": shares,
        "changes": list(zip(common, times)),
        "recoveries_each": [r["changes"][-1][1] for r in runs if r["changes"]],
    }


SIM_CACHE = {}


def run_sim(sim_bin, point, figures, out_dir):
    """The simulator's report of `point` with `figures` (the simulator is
    deterministic: a run is made once for the same point and figures)."""
    key = (point, tuple(sorted(figures.items())))
    sim_txt = os.path.join(out_dir, point + ".sim.txt")
    if key in SIM_CACHE:
        open(sim_txt, "w").write(SIM_CACHE[key])
        return sim_txt
    sc = json.load(open(os.path.join(ROOT, "fixtures", "scenarios", point + ".json")))
    # The scenario's cost takes one idle floor: the figure for its EMBEDDED_AI.
    cost = {k: v for k, v in figures.items() if not k.startswith("idle_floor_")}
    ai_on = sc.get("env", {}).get("EMBEDDED_AI", "1") != "0"
    cost["idle_floor_us_per_s"] = figures["idle_floor_ai_on_us_per_s" if ai_on
                                          else "idle_floor_ai_off_us_per_s"]
    sc.setdefault("cost", {}).update(cost)
    sc.setdefault("env", {})["STORE"] = "sqlite:wizard-sim.db"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(sc, f)
        path = f.name
    try:
        run = subprocess.run([sim_bin, "run", path, "--seed", "1"], capture_output=True,
                             text=True)
    finally:
        os.unlink(path)
    out = run.stdout
    if "trace hash" not in out:
        sys.exit(f"the simulator did not run {point}: {run.stderr.strip()[:400]}")
    SIM_CACHE[key] = out
    open(sim_txt, "w").write(out)
    return sim_txt


def compare(p, real, figures, sim_bin, out_dir):
    """The simulator against the real medians at one point: moves a second, the worst
    level-change gap (None: not the same changes), the search share."""
    sim_txt = run_sim(sim_bin, p, figures, out_dir)
    rows = sim_rows(sim_txt)
    sc = sim_changes(sim_txt) or changes(rows)
    same = [c for c, _ in sc] == [c for c, _ in real["changes"]]
    gap = max([abs(ta - tb) for (_, ta), (_, tb) in zip(real["changes"], sc)] or [0.0])
    return {
        "moves": rate(rows, real["secs"]),
        "work_s": work_s(rows, real["load"]),
        "gap": gap if same else None,
        "changes": sc,
        "share": search_share(open(sim_txt).read(), SIM_SHARE),
    }


def loss(points, figures, sim_bin, out_dir):
    """The sum over `points` of the squared errors, each in units of its bound: moves a
    second (20 %), the worst level-change gap (1 s; other changes count 4), the search
    share (25 %)."""
    total = 0.0
    for p, real in points:
        c = compare(p, real, figures, sim_bin, out_dir)
        if c["moves"] > 0 and real["moves"]:
            total += (math.log(c["moves"] / real["moves"]) / math.log(1.2)) ** 2
        total += 4.0 if c["gap"] is None else c["gap"] ** 2
        if c["share"] and real["share"]:
            total += (math.log(c["share"] / real["share"]) / math.log(1.25)) ** 2
    return total


def fit(points, figures, set_x, x0, sim_bin, out_dir, target):
    """Secant on x (applied to the figures by set_x) so that the mean over `points` of
    log(sim / real) of `target` is zero, the relative errors balanced over the points:
    "moves", the saturated moves a second, or "work_s", the time the load's work took
    (the simulator plays the fixed workload in the real server's time; with the AI
    off the games are played within about a second of their spread starts, too soon
    for that time to tell costs apart)."""
    def err(x):
        fig = set_x(dict(figures), x)
        e = []
        for p, real in points:
            c = compare(p, real, fig, sim_bin, out_dir)
            if target == "balanced":
                # Half the time's error, half the moves' (which fall as the time grows).
                if min(c["work_s"], c["moves"], real["work_s"], real["moves"]) > 0:
                    e.append(0.5 * math.log(c["work_s"] / real["work_s"])
                             + 0.5 * math.log(real["moves"] / c["moves"]))
            elif c[target] > 0 and real[target] > 0:
                e.append(math.log(c[target] / real[target]))
        return sum(e) / len(e) if e else 0.0
    a, b = x0, x0 * 0.8 if x0 > 0 else 1.0
    ea, eb = err(a), err(b)
    for _ in range(4):
        if eb == ea:
            break
        c = max(0.0, b - eb * (b - a) / (eb - ea))
        a, ea, b, eb = b, eb, c, err(c)
        if abs(eb) < 1e-4:
            break
    return set_x(dict(figures), b)


def main():
    out_dir, sim_bin, load = sys.argv[1], sys.argv[2], float(sys.argv[3])
    names = sys.argv[4:]
    real = {p: {**real_point(out_dir, p, load), "load": load} for p in names}
    old = json.load(open(FILE))
    figures = dict(old["figures"])
    off = [(p, real[p]) for p in names if p.endswith("_ai0")]
    on = [(p, real[p]) for p in names if p.endswith("_ai1")]
    # The idle floor with the embedded AI's workers and without, each from its own
    # points' quiet seconds.
    for points, key in ((on, "idle_floor_ai_on_us_per_s"), (off, "idle_floor_ai_off_us_per_s")):
        idle = []
        for p, r in points:
            quota = float(re.match(r"calib_(\d+)_", p)[1]) / 100
            quiet = [x["cpu"] for x in r["rows"] if x["t"] > load + 8]
            if quiet:
                idle.append(median(quiet) * quota * 1e6)
        if idle:
            figures[key] = round(sum(idle) / len(idle), -2)
        elif points:
            print(f"{key}: no quiet seconds in the timelines (the client stops once the "
                  f"server is back to normal); kept {figures[key]}", file=sys.stderr)
    if off:
        # A frame read, a frame written and the fallback's move, scaled together from
        # their first fitted values (8, 8 and 10 us): the per-move work of the points
        # without the AI, where most of the CPU is frames.
        figures = fit(off, figures, lambda f, x: {**f, "read_us": round(8.0 * x, 2),
                                                  "write_us": round(8.0 * x, 2),
                                                  "fallback_move_us": round(10.0 * x, 2)},
                      figures["read_us"] / 8.0, sim_bin, out_dir, "moves")
    if on:
        base = (figures["ai_embedded_us"], figures["ai_embedded_heuristic_us"])
        tried = {}

        def with_factor(x):
            # The decisions' figures scaled by x, then the answer's fitted to the moves
            # and the work's time, half each.
            x = round(x, 3)
            if x not in tried:
                f = {**figures, "ai_embedded_us": round(base[0] * x, 1),
                     "ai_embedded_heuristic_us": round(base[1] * x, 1)}
                f = fit(on, f, lambda f, a: {**f, "ai_embedded_answer_us": round(a, 2)},
                        f.get("ai_embedded_answer_us") or 10.0, sim_bin, out_dir, "balanced")
                tried[x] = (loss(on, f, sim_bin, out_dir), f)
                print(f"factor {x}: loss {tried[x][0]:.3f}", file=sys.stderr)
            return tried[x]

        grid = [0.6, 0.75, 0.9, 1.0, 1.12, 1.3, 1.55]
        for x in grid:
            with_factor(x)
        # Refine: halfway to each neighbour of the best, twice.
        step = 0.5
        for _ in range(2):
            best = min(tried, key=lambda x: tried[x][0])
            xs = sorted(tried)
            i = xs.index(best)
            for j in (i - 1, i + 1):
                if 0 <= j < len(xs):
                    with_factor(best + (xs[j] - best) * step)
        best = min(tried, key=lambda x: tried[x][0])
        figures = tried[best][1]
    out = []
    verdicts = []
    for p in names:
        c = compare(p, real[p], figures, sim_bin, out_dir)
        r = real[p]
        point = {
            "scenario": p,
            "real_levels": ", ".join(f"{k.split('->')[1]} {t:.2f}" for k, t in r["changes"]),
            "sim_levels": ", ".join(f"{t:.2f}" for _, t in c["changes"]),
            "worst_gap_s": round(c["gap"], 2) if c["gap"] is not None else 99.0,
            "real_moves_per_s": round(r["moves"]),
            "sim_moves_per_s": round(c["moves"]),
            "real_runs": len(r["moves_each"]),
            "real_moves_per_s_min": min(r["moves_each"]),
            "real_moves_per_s_max": max(r["moves_each"]),
        }
        if p.endswith("_ai1"):
            point["real_search_per_mille"] = r["share"]
            point["sim_search_per_mille"] = c["share"]
        out.append(point)
        ratio = c["moves"] / r["moves"] if r["moves"] else float("nan")
        ok = c["gap"] is not None and c["gap"] <= 1.0 and abs(ratio - 1) <= 0.20
        verdicts.append(ok)
        print(f"{p}: real runs moves/s {r['moves_each']} (median {r['moves']:.0f}), "
              f"work done at {r['work_s_each']} s (sim {c['work_s']:.2f}), "
              f"back to normal {r['recoveries_each']}, search {r['shares_each']}; "
              f"sim moves/s {c['moves']:.0f} ({ratio:.2f}), worst level gap "
              f"{point['worst_gap_s']} s, search {c['share']}: "
              f"{'AGREE' if ok else 'DIFFER'}")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--"] + old["paths"],
                           capture_output=True, text=True, cwd=ROOT).stdout.strip()
    if dirty:
        print("warning: the modelled code has uncommitted changes; the file names HEAD", file=sys.stderr)
    new = {**old, "measured_on": commit, "figures": figures, "points": out}
    with open(FILE, "w") as f:
        json.dump(new, f, indent=2)
        f.write("\n")
    print(f"{sum(verdicts)} of {len(verdicts)} points agree")
    print(f"figures: {figures}; wrote {FILE} (measured on {commit[:12]})")


main()
