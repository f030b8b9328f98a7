"""The timelines of bench/calibrate.sh: the real server's (bench/cpu_quota_test.sh)
and the simulator's, as rows, and their level changes."""
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
