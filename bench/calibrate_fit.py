#!/usr/bin/env python3
"""Fits the simulator's calibration figures to the real server's measurements at the
calibration points and writes fixtures/sim-calibration.json (bench/calibrate.sh).

Usage: calibrate_fit.py OUT_DIR SIM_BIN LOAD_SECS POINT...
  OUT_DIR holds <point>.real.txt, the real server's timeline (bench/cpu_quota_test.sh)
  for each POINT, a scenario name in fixtures/scenarios (calib_<quota>_<games>_ai<0|1>).

Each figure is fitted by the secant method, the simulator run with candidate figures
(the scenario's `cost`) and the server's default store (SQLite) against the real
server's: `fallback_move_us` to the saturated moves a second of the points with
EMBEDDED_AI=0; at the points with 1, one factor on both embedded decision figures to
the share of decisions the primary agent (search) made, and for each factor tried
`ai_embedded_answer_us` (the core thread's share of an answer, which paces the games
when the workers keep up) to the saturated moves a second. The idle floor is the real server's CPU in the quiet end of the recovery at the points with
EMBEDDED_AI=1 (the default). The file records the commit measured (git HEAD)."""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
FILE = os.path.join(ROOT, "fixtures", "sim-calibration.json")
sys.path.insert(0, os.path.dirname(__file__))
from calibrate_rows import real_rows, sim_rows, changes, sim_changes  # noqa: E402


def saturated(real, load):
    return [r["t"] for r in real if r["t"] <= load and r["cpu"] >= 0.9]


def rate(rows, secs):
    xs = [r["moves"] for r in rows if any(abs(r["t"] - t) < 0.5 for t in secs)]
    return sum(xs) / len(xs) if xs else 0.0


def search_share(text, pattern):
    """The share of the embedded AI's decisions the primary agent (search) made, per
    mille: the real server's from bench/cpu_quota_test.sh's log, the simulator's from
    its report; None when the text does not say."""
    m = re.search(pattern, text)
    return int(m[1]) if m else None


def run_sim(sim_bin, point, figures, out_dir):
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
    sim_txt = os.path.join(out_dir, point + ".sim.txt")
    open(sim_txt, "w").write(out)
    return sim_txt


def share_error(points, figures, sim_bin, out_dir):
    """The mean over `points` of log(sim / real) of the search share."""
    e = []
    for p, _ in points:
        real = search_share(open(os.path.join(out_dir, p + ".real.log")).read(),
                            r"\((\d+) per mille\)")
        sim = search_share(open(run_sim(sim_bin, p, figures, out_dir)).read(),
                           r'"ai_embedded_search_per_mille": (\d+)')
        if real and sim:
            e.append(math.log(sim / real))
    return sum(e) / len(e) if e else 0.0


def fit(points, figures, set_x, x0, sim_bin, out_dir, load):
    """Secant on x (applied to the figures by set_x) so that the mean over `points` of
    1/sim - 1/real (seconds per move while saturated) is zero."""
    def err(x):
        fig = set_x(dict(figures), x)
        e = []
        for p, real in points:
            secs = saturated(real, load)
            s = rate(sim_rows(run_sim(sim_bin, p, fig, out_dir)), secs)
            r = rate(real, secs)
            if s > 0 and r > 0:
                e.append(1 / s - 1 / r)
        return sum(e) / len(e) if e else 0.0
    a, b = x0, x0 * 0.8 if x0 > 0 else 1.0
    ea, eb = err(a), err(b)
    for _ in range(4):
        if eb == ea:
            break
        c = max(0.0, b - eb * (b - a) / (eb - ea))
        a, ea, b, eb = b, eb, c, err(c)
        if abs(eb) < 1e-7:
            break
    return set_x(dict(figures), b)


def main():
    out_dir, sim_bin, load = sys.argv[1], sys.argv[2], float(sys.argv[3])
    names = sys.argv[4:]
    real = {p: real_rows(os.path.join(out_dir, p + ".real.txt")) for p in names}
    old = json.load(open(FILE))
    figures = dict(old["figures"])
    off = [(p, real[p]) for p in names if p.endswith("_ai0")]
    on = [(p, real[p]) for p in names if p.endswith("_ai1")]
    # The idle floor with the embedded AI's workers and without, each from its own
    # points' quiet seconds.
    for points, key in ((on, "idle_floor_ai_on_us_per_s"), (off, "idle_floor_ai_off_us_per_s")):
        idle = []
        for p, rows in points:
            quota = float(re.match(r"calib_(\d+)_", p)[1]) / 100
            quiet = [r["cpu"] for r in rows if r["t"] > load + 8]
            if quiet:
                quiet.sort()
                idle.append(quiet[len(quiet) // 2] * quota * 1e6)
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
                      figures["read_us"] / 8.0, sim_bin, out_dir, load)
    if on:
        base = (figures["ai_embedded_us"], figures["ai_embedded_heuristic_us"])

        def with_factor(x):
            # The decisions' figures scaled by x, then the answer's fitted to the moves.
            f = {**figures, "ai_embedded_us": round(base[0] * x, 1),
                 "ai_embedded_heuristic_us": round(base[1] * x, 1)}
            return fit(on, f, lambda f, a: {**f, "ai_embedded_answer_us": round(a, 2)},
                       f.get("ai_embedded_answer_us") or 10.0, sim_bin, out_dir, load)

        a, b = 1.0, 1.2
        fa = with_factor(a)
        fb = with_factor(b)
        ea = share_error(on, fa, sim_bin, out_dir)
        eb = share_error(on, fb, sim_bin, out_dir)
        for _ in range(4):
            if eb == ea or abs(eb) < 0.01:
                break
            c = max(0.1, b - eb * (b - a) / (eb - ea))
            fc = with_factor(c)
            a, ea, b, fb, eb = b, eb, c, fc, share_error(on, fc, sim_bin, out_dir)
        figures = fb
    out = []
    for p in names:
        sim_txt = run_sim(sim_bin, p, figures, out_dir)
        rows = sim_rows(sim_txt)
        secs = saturated(real[p], load)
        rc, sc = changes(real[p]), sim_changes(sim_txt) or changes(rows)
        gap = max([abs(ta - tb) for (_, ta), (_, tb) in zip(rc, sc)] or [0.0])
        out.append({
            "scenario": p,
            "real_levels": ", ".join(f"{c.split('->')[1]} {t:g}" for c, t in rc),
            "sim_levels": ", ".join(f"{t:.2f}" for _, t in sc),
            "worst_gap_s": round(gap, 2),
            "real_moves_per_s": round(rate(real[p], secs)),
            "sim_moves_per_s": round(rate(rows, secs)),
        })
        if p.endswith("_ai1"):
            out[-1]["real_search_per_mille"] = search_share(
                open(os.path.join(out_dir, p + ".real.log")).read(), r"\((\d+) per mille\)")
            out[-1]["sim_search_per_mille"] = search_share(
                open(sim_txt).read(), r'"ai_embedded_search_per_mille": (\d+)')
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
    for p in out:
        print(f"{p['scenario']}: moves/s real {p['real_moves_per_s']} sim {p['sim_moves_per_s']}, "
              f"level gap {p['worst_gap_s']} s")
    print(f"figures: {figures}; wrote {FILE} (measured on {commit[:12]})")


main()
