#!/usr/bin/env python3
"""deploy/smoke.sh's caps check: every container's CPU, memory and pids caps in force.

For each service of the running project it compares the caps configured in compose.yaml
(as resolved by `docker compose config`) with:
  1. what Docker was told (`docker inspect`: NanoCpus, Memory, MemorySwap, PidsLimit),
  2. what `docker stats` reports (the memory limit; usage and PIDs below their caps),
  3. what the kernel enforces: the container's cgroup files, cgroup v2 (cpu.max,
     memory.max, pids.max) or v1 (cpu.cfs_quota_us / cpu.cfs_period_us,
     memory.limit_in_bytes, pids.max), read from the host through /proc/PID/cgroup, or
     from inside the container when the host's cgroup tree does not show them.
Prints one line per service and check; exits 1 with the reasons when any differs.

Usage: caps.py -- DOCKER_COMPOSE_ARGS...   (e.g. -- -p wizard-smoke -f compose.yaml ...)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def run(*args: str) -> str:
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return out.stdout


def size_bytes(text: str) -> int:
    """'512MiB', '1GiB', '64M', '1.5g', '536870912' -> bytes."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([kmgtKMGT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(float(m.group(1)) * UNITS[m.group(2).lower()])


def cgroup_files(pid: int, cid: str) -> dict[str, str]:
    """The container's cgroup limit files that exist, by name, read from the host."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    found: dict[str, str] = {}
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if v2 and controllers == "":
            for name in ("cpu.max", "memory.max", "pids.max"):
                f = Path("/sys/fs/cgroup") / path.lstrip("/") / name
                if f.exists():
                    found[name] = f.read_text().strip()
        for ctl in controllers.split(","):
            names = {
                "cpu": ("cpu.cfs_quota_us", "cpu.cfs_period_us"),
                "memory": ("memory.limit_in_bytes",),
                "pids": ("pids.max",),
            }.get(ctl, ())
            for name in names:
                for mount in (ctl, controllers, "cpu,cpuacct"):
                    f = Path("/sys/fs/cgroup") / mount / path.lstrip("/") / name
                    if f.exists():
                        found[name] = f.read_text().strip()
                        break
    return found


def cgroup_files_inside(cid: str) -> dict[str, str]:
    """The same files read inside the container (its own cgroup namespace or mount)."""
    script = (
        "for f in /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max "
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us "
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us "
        "/sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max; do "
        '[ -r "$f" ] && printf "%s %s\\n" "${f##*/}" "$(cat "$f")"; done; true'
    )
    found: dict[str, str] = {}
    for line in run("docker", "exec", cid, "sh", "-c", script).splitlines():
        name, _, value = line.partition(" ")
        found.setdefault(name, value.strip())
    return found


def kernel_caps(files: dict[str, str]) -> dict[str, float | int | None]:
    cpus = memory = pids = None
    if "cpu.max" in files:
        quota, period = files["cpu.max"].split()
        cpus = None if quota == "max" else int(quota) / int(period)
    elif "cpu.cfs_quota_us" in files and "cpu.cfs_period_us" in files:
        quota = int(files["cpu.cfs_quota_us"])
        cpus = None if quota < 0 else quota / int(files["cpu.cfs_period_us"])
    mem = files.get("memory.max") or files.get("memory.limit_in_bytes")
    if mem is not None:
        memory = None if mem == "max" or int(mem) >= 1 << 60 else int(mem)
    if "pids.max" in files:
        pids = None if files["pids.max"] == "max" else int(files["pids.max"])
    return {"cpus": cpus, "memory": memory, "pids": pids}


def main() -> int:
    compose = ["docker", "compose", *sys.argv[sys.argv.index("--") + 1 :]]
    config = json.loads(run(*compose, "config", "--format", "json"))
    failures: list[str] = []
    for name, svc in sorted(config["services"].items()):
        limits = svc["deploy"]["resources"]["limits"]
        want = {
            "cpus": float(limits["cpus"]),
            "memory": size_bytes(limits["memory"]),
            "pids": int(svc["pids_limit"]),
        }
        cid = run(*compose, "ps", "-q", name).strip()
        if not cid:
            failures.append(f"{name}: no running container")
            continue
        info = json.loads(run("docker", "inspect", cid))[0]
        hc = info["HostConfig"]
        told = {
            "cpus": hc["NanoCpus"] / 1e9,
            "memory": hc["Memory"],
            "pids": hc["PidsLimit"],
        }
        stats = json.loads(run("docker", "stats", "--no-stream", "--format", "{{json .}}", cid))
        used, _, stats_limit = stats["MemUsage"].partition("/")
        files = cgroup_files(info["State"]["Pid"], cid)
        where = "host cgroup tree"
        if not {"cpu.max", "cpu.cfs_quota_us"} & set(files) or not {"memory.max", "memory.limit_in_bytes"} & set(files):
            files = cgroup_files_inside(cid)
            where = "inside the container"
        kernel = kernel_caps(files)
        print(
            f"{name}: configured cpus {want['cpus']:g}, memory {want['memory'] >> 20} MiB, pids {want['pids']}; "
            f"docker stats: {stats['MemUsage'].strip()}, {stats['PIDs']} pids, CPU {stats['CPUPerc']}; "
            f"kernel ({where}): {files}"
        )
        for key in ("cpus", "memory", "pids"):
            if told[key] != want[key] and abs(told[key] - want[key]) > 1e-6:
                failures.append(f"{name}: docker inspect {key} is {told[key]}, compose.yaml says {want[key]}")
            got = kernel[key]
            if got is None:
                failures.append(f"{name}: no {key} cap in force in the kernel ({files})")
            elif abs(got - want[key]) > max(1e-6, 0.001 * want[key]):
                failures.append(f"{name}: the kernel enforces {key} {got}, compose.yaml says {want[key]}")
        if hc["MemorySwap"] != want["memory"]:
            failures.append(f"{name}: memory+swap cap {hc['MemorySwap']} is not the memory cap {want['memory']} (memswap_limit)")
        # docker stats rounds its units (e.g. 511.9MiB): within 1 %.
        if abs(size_bytes(stats_limit) - want["memory"]) > 0.01 * want["memory"]:
            failures.append(f"{name}: docker stats memory limit {stats_limit.strip()}, compose.yaml says {want['memory']} bytes")
        if size_bytes(used) >= want["memory"]:
            failures.append(f"{name}: memory use {used.strip()} at its cap")
        if int(stats["PIDs"]) >= want["pids"]:
            failures.append(f"{name}: {stats['PIDs']} pids, at its cap {want['pids']}")
    for f in failures:
        print(f"FAIL caps: {f}")
    if not failures:
        print(f"caps: {len(config['services'])} containers, CPU, memory, swap and pids caps in force as configured")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
