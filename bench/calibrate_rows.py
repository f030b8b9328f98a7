"""The timelines of bench/calibrate.sh: the real server's (bench/cpu_quota_test.sh)
and the simulator's, as rows, and their level changes."""
import datetime
import os
import re


def real_rows(path):
    rows = []
    for line in open(path):
        m = re.match(r"\s*([\d.]+)\s+(\w+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)", line)
        if m:
            rows.append(dict(t=float(m[1]), level=m[2], cpu=float(m[4]), thr=float(m[5]),
                             moves=int(m[6])))
    return rows


def sim_rows(path):
    rows = []
    for line in open(path):
        m = re.match(r"\s*(\d+)\s+(normal|busy|overloaded)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)", line)
        if m:
            rows.append(dict(t=float(m[1]), level=m[2], cpu=float(m[5]), thr=float(m[6]),
                             moves=int(m[8])))
    return rows


def saturated(real, load):
    """The seconds of the load in which the real server used at least 0.9 of its quota."""
    return [r["t"] for r in real if r["t"] <= load and r["cpu"] >= 0.9]


def rate(rows, secs):
    """The mean moves a second of `rows` over the seconds `secs`."""
    xs = [r["moves"] for r in rows if any(abs(r["t"] - t) < 0.5 for t in secs)]
    return sum(xs) / len(xs) if xs else 0.0


def changes(rows):
    out, prev = [], "normal"
    for r in rows:
        if r["level"] != prev:
            out.append((f"{prev}->{r['level']}", r["t"]))
            prev = r["level"]
    return out


def sim_changes(path):
    """The simulator's own list of level changes, at the probe's sample times (its
    table's row t covers the second that ends at t)."""
    for line in open(path):
        if line.startswith("level changes:"):
            return [(m[2], float(m[1])) for m in re.finditer(r"([\d.]+)s (\w+->\w+)", line)]
    return []


def real_changes(timeline_path, log_path=None):
    """The real server's level changes at the times its own log gives them (its probe's
    samples), on the client's timeline: the timeline's last line says when the client
    started (unix time). Without those two (an older timeline, no log), the seconds
    at which the client's once-a-second poll of /health saw each change, up to a
    second late."""
    log_path = log_path or timeline_path[:-4] + ".log"
    started = None
    for line in open(timeline_path):
        m = re.match(r"started at unix time ([\d.]+) s", line)
        if m:
            started = float(m[1])
    if started is None or not os.path.exists(log_path):
        return changes(real_rows(timeline_path))
    out = []
    for line in open(log_path):
        m = re.match(r"(\S+Z)\s+\w+\s+\S+ Load level (\w+) -> (\w+)", line)
        if m:
            at = datetime.datetime.fromisoformat(m[1]).timestamp()
            out.append((f"{m[2]}->{m[3]}", round(at - started, 3)))
    return out or changes(real_rows(timeline_path))
