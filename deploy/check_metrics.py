#!/usr/bin/env python3
"""Checks the monitoring files against the real server (run by deploy/validate.sh).

1. Every metric named in a query of deploy/grafana/wizard.json (panels, rows and template
   variables) and in an expression of deploy/prometheus/alerts.yml is one the real
   wizard-server exposes on /metrics: the script starts the binary on loopback
   (STORE=memory), scrapes it and compares the names. A query must name a series as it
   is exposed: `wizard_moves_total`, not `wizard_moves`; a histogram through its
   `_bucket`, `_sum` or `_count` series (its `# TYPE` line counts even before the first
   observation).
2. Every alert has a `runbook` annotation that is, word for word, the "adjust" cell of a
   row of the tuning table in docs/OPERATIONS.md.
3. With --promtool, every dashboard query parses as PromQL (promtool check rules on the
   queries written as recording rules, Grafana's variables replaced by values).
4. --self-test: broken dashboards and rules (a metric that does not exist, a counter
   without `_total`, a histogram without `_bucket`, a runbook not in the table, ...) must
   fail, and the name extraction must find what it should.

Usage: check_metrics.py REPO_ROOT (--server BINARY | --metrics FILE) [--promtool PATH] [--self-test]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

# Series Prometheus makes itself for every target; alerts may name them.
PROMETHEUS_MADE = {"up"}

SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "gauge": ("",),
    "info": ("_info",),
    "stateset": ("",),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "unknown": ("",),
}

# ---------------------------------------------------------------- what the server exposes


def exposed_names(text: str) -> set[str]:
    """Series names of a Prometheus or OpenMetrics exposition: the samples' names, and
    every name a `# TYPE` line implies (a histogram's buckets exist before any sample)."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                base, kind = parts[2], parts[3]
                for suffix in SUFFIXES.get(kind, ("",)):
                    if kind == "counter" and base.endswith("_total") and suffix == "_total":
                        names.add(base)
                    else:
                        names.add(base + suffix)
        elif line and not line.startswith("#"):
            m = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line)
            if m:
                names.add(m.group(0))
    return names


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_server(binary: Path) -> str:
    """Starts the real server on a loopback port, returns its /metrics, stops it."""
    port = free_port()
    env = dict(os.environ, BIND=f"127.0.0.1:{port}", STORE="memory", LOG_LEVEL="warn")
    proc = subprocess.Popen([str(binary)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    return r.read().decode()
            except OSError:
                if proc.poll() is not None:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise SystemExit(f"{binary} exited with {proc.returncode} before /metrics answered:\n{err}")
                if time.monotonic() > deadline:
                    raise SystemExit(f"{binary}: /metrics did not answer within 30 s")
                time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- what the queries name

KEYWORDS = {
    "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
    "group_left", "group_right", "inf", "nan", "start", "end",
}
STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\]")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
TOKEN = re.compile(
    r"(?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?)"
    r"|(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?P<call>\s*\()?"
)


def expr_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (Grafana variables allowed)."""
    names = set(re.findall(r'__name__\s*=\s*"([A-Za-z_:][A-Za-z0-9_:]*)"', expr))
    s = STRING.sub('""', expr)
    s = GRAFANA_VAR.sub(" 0 ", s)
    s = re.sub(r"\{[^{}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = GROUPING.sub(" ", s)
    s = re.sub(r"\boffset\s+-?\S+", " ", s)
    for m in TOKEN.finditer(s):
        name = m.group("name")
        if name and not m.group("call") and name.lower() not in KEYWORDS:
            names.add(name)
    return names


def template_expr(query) -> str:
    """The PromQL inside a Grafana template variable's query, or ''."""
    if isinstance(query, dict):
        query = query.get("query", "")
    if not isinstance(query, str):
        return ""
    m = re.fullmatch(r"\s*label_values\(\s*(.+?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*", query)
    if m:
        return m.group(1)
    m = re.fullmatch(r"\s*query_result\((.*)\)\s*", query, re.S)
    if m:
        return m.group(1)
    return ""


def dashboard_queries(dash: dict) -> list[tuple[str, str]]:
    """(where, expr) of every Prometheus query of the dashboard."""
    out: list[tuple[str, str]] = []

    def walk(panels):
        for p in panels or []:
            for t in p.get("targets") or []:
                if t.get("expr"):
                    out.append((f"panel {p.get('title')!r} {t.get('refId', '')}", t["expr"]))
            walk(p.get("panels"))

    walk(dash.get("panels"))
    for v in (dash.get("templating") or {}).get("list") or []:
        if v.get("type") == "query":
            expr = template_expr(v.get("query"))
            if expr:
                out.append((f"variable {v.get('name')!r}", expr))
    return out


def alert_rules(rules: dict) -> list[dict]:
    return [r for g in (rules or {}).get("groups") or [] for r in g.get("rules") or []]


# ---------------------------------------------------------------- the checks


def tuning_actions(operations_md: str) -> set[str]:
    """The "adjust" cells of docs/OPERATIONS.md's tuning table."""
    section = operations_md.split("\n## Tuning", 1)[1].split("\n## ", 1)[0]
    cells = set()
    for line in section.splitlines():
        line = line.strip()
        if not line.startswith("|") or re.fullmatch(r"[|\- ]+", line):
            continue
        row = [c.strip() for c in line.strip("|").split("|")]
        if len(row) == 2 and row != ["symptom", "adjust"]:
            cells.add(row[1])
    if len(cells) < 5:
        raise SystemExit("could not read the tuning table of docs/OPERATIONS.md")
    return cells


def check(dash: dict, rules: dict, exposed: set[str], actions: set[str]) -> list[str]:
    """Every way the dashboard and the alerts disagree with the server and the runbooks."""
    errors: list[str] = []
    named: list[tuple[str, str]] = [("dashboard " + w, e) for w, e in dashboard_queries(dash)]
    for r in alert_rules(rules):
        label = r.get("alert") or r.get("record")
        named.append((f"alert {label}", str(r.get("expr", ""))))
        if r.get("alert"):
            runbook = ((r.get("annotations") or {}).get("runbook") or "").strip()
            if not runbook:
                errors.append(f"alert {label}: no runbook annotation")
            elif runbook not in actions:
                errors.append(f"alert {label}: runbook {runbook!r} is not a row of docs/OPERATIONS.md's tuning table")
    if not any(w.startswith("dashboard") for w, _ in named):
        errors.append("the dashboard has no Prometheus query")
    if not alert_rules(rules):
        errors.append("alerts.yml has no rule")
    for where, expr in named:
        names = expr_metric_names(expr)
        if not names and "$" not in expr and not re.fullmatch(r"[\d.\s]+", expr):
            errors.append(f"{where}: names no metric: {expr}")
        for name in sorted(names):
            if name in exposed or name in PROMETHEUS_MADE:
                continue
            errors.append(f"{where}: {name} is not a metric the server exposes")
    ids = [p.get("id") for p in walk_panels(dash)]
    if len(ids) != len(set(ids)):
        errors.append("dashboard: panel ids are not unique")
    return errors


def walk_panels(dash: dict):
    stack = list(dash.get("panels") or [])
    while stack:
        p = stack.pop()
        yield p
        stack.extend(p.get("panels") or [])


def promtool_syntax(promtool: str, dash: dict) -> list[str]:
    """Dashboard queries as recording rules through `promtool check rules`."""
    values = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
    for v in (dash.get("templating") or {}).get("list") or []:
        cur = (v.get("current") or {}).get("value")
        if isinstance(cur, str) and re.fullmatch(r"[\d.]+", cur):
            values[v["name"]] = cur

    def subst(m: re.Match[str]) -> str:
        name = m.group(0).strip("${}[]").split(":")[0]
        return values.get(name, ".*")

    rules = [{"record": f"dashboard:query_{i}", "expr": GRAFANA_VAR.sub(subst, e)}
             for i, (_, e) in enumerate(dashboard_queries(dash))]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
    try:
        r = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        return [f"dashboard queries do not parse as PromQL (promtool):\n{r.stdout}{r.stderr}"]
    return []


# ---------------------------------------------------------------- self-test

EXTRACTION = [
    ('sum by (reason) (rate(wizard_fallbacks_total{reason=~"a|b", instance=~"$instance"}[$__rate_interval]))',
     {"wizard_fallbacks_total"}),
    ("histogram_quantile(0.99, sum by (le, input) (rate(wizard_core_handle_seconds_bucket[5m])))",
     {"wizard_core_handle_seconds_bucket"}),
    ("max(process_resident_memory_bytes) / $memory_cap_bytes", {"process_resident_memory_bytes"}),
    ("a_total + on (instance) group_left (version) b_info offset 5m > 1e3", {"a_total", "b_info"}),
    ('x and on (instance, job) avg_over_time(y[1h:1m]) < 0.7 unless {__name__="z"}', {"x", "y", "z"}),
    ("sum without (by) (rate(m_total[5m])) > bool 0.5", {"m_total"}),
]


def self_test(dash: dict, rules: dict, exposed: set[str], actions: set[str]) -> list[str]:
    failures: list[str] = []
    for expr, want in EXTRACTION:
        got = expr_metric_names(expr)
        if got != want:
            failures.append(f"extraction of {expr!r}: {sorted(got)}, expected {sorted(want)}")

    def dash_with(expr: str, nested: bool = False) -> dict:
        return _with_query(dash, expr, nested)

    def rules_with(edit) -> dict:
        r = copy.deepcopy(rules)
        edit(alert_rules(r))
        return r

    broken = [
        ("a dashboard naming a metric that does not exist",
         dash_with("sum(rate(wizard_no_such_metric_total[5m]))"), rules),
        ("the same in a collapsed row", dash_with("wizard_no_such_gauge", nested=True), rules),
        ("a counter without _total", dash_with("rate(wizard_moves[5m])"), rules),
        ("a histogram without _bucket",
         dash_with("histogram_quantile(0.9, rate(wizard_core_handle_seconds[5m]))"), rules),
        ("a template variable on a missing metric",
         _with_variable(dash, "label_values(wizard_no_such_info, instance)"), rules),
        ("an alert on a metric that does not exist",
         dash, rules_with(lambda rs: rs[0].update(expr="wizard_no_such_gauge > 1"))),
        ("an alert without a runbook",
         dash, rules_with(lambda rs: rs[0]["annotations"].pop("runbook"))),
        ("an alert whose runbook is not in the tuning table",
         dash, rules_with(lambda rs: rs[0]["annotations"].update(runbook="restart it"))),
    ]
    # Each broken input must add an error to those of the real files (which may have some).
    base = set(check(dash, rules, exposed, actions))
    for label, d, r in broken:
        errors = check(d, r, exposed, actions)
        if not set(errors) - base:
            failures.append(f"the check accepts a broken input: {label}")
    return failures


def _with_query(dash: dict, expr: str, nested: bool = False) -> dict:
    d = copy.deepcopy(dash)
    panel = {"id": 9999, "type": "timeseries", "title": "self-test",
             "targets": [{"refId": "A", "expr": expr}]}
    if nested:
        d["panels"].append({"id": 9998, "type": "row", "collapsed": True, "panels": [panel]})
    else:
        d["panels"].append(panel)
    return d


def _with_variable(dash: dict, query: str) -> dict:
    d = copy.deepcopy(dash)
    d.setdefault("templating", {}).setdefault("list", []).append(
        {"name": "selftest", "type": "query", "query": {"query": query, "refId": "x"}})
    return d


# ---------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--server", type=Path, help="the wizard-server binary to start and scrape")
    src.add_argument("--metrics", type=Path, help="a saved /metrics page instead")
    ap.add_argument("--dashboard", type=Path, help="default: deploy/grafana/wizard.json")
    ap.add_argument("--alerts", type=Path, help="default: deploy/prometheus/alerts.yml")
    ap.add_argument("--promtool", help="check that the dashboard's queries parse")
    ap.add_argument("--self-test", action="store_true", help="also feed broken inputs to the check")
    args = ap.parse_args()
    root = args.root.resolve()
    dash = json.loads((args.dashboard or root / "deploy/grafana/wizard.json").read_text())
    rules = yaml.safe_load((args.alerts or root / "deploy/prometheus/alerts.yml").read_text())
    actions = tuning_actions((root / "docs/OPERATIONS.md").read_text())
    text = scrape_server(args.server) if args.server else args.metrics.read_text()
    exposed = exposed_names(text)
    if len(exposed) < 20 or "wizard_build_info" not in exposed:
        print(f"FAIL the scraped page does not look like the server's /metrics ({len(exposed)} names)")
        return 1

    errors = check(dash, rules, exposed, actions)
    if args.promtool:
        errors += promtool_syntax(args.promtool, dash)
    for e in errors:
        print(f"FAIL {e}")
    n_dash, n_alerts = len(dashboard_queries(dash)), len(alert_rules(rules))
    used = set().union(*(expr_metric_names(e) for _, e in dashboard_queries(dash)),
                       *(expr_metric_names(str(r.get("expr"))) for r in alert_rules(rules)))
    print(f"metrics: {n_dash} dashboard queries and {n_alerts} alert rules name {len(used)} series; "
          f"the server exposes {len(exposed)}: " + ("ok" if not errors else f"{len(errors)} error(s)"))
    failures: list[str] = []
    if args.self_test:
        failures = self_test(dash, rules, exposed, actions)
        if args.promtool and not promtool_syntax(args.promtool, _with_query(dash, "max(wizard_load_level")):
            failures.append("promtool accepts a dashboard query with an unclosed parenthesis")
        for f in failures:
            print(f"FAIL self-test: {f}")
        print(f"self-test: {len(EXTRACTION)} extractions, broken dashboards and rules rejected"
              if not failures else f"self-test: {len(failures)} failure(s)")
    return 1 if errors or failures else 0


if __name__ == "__main__":
    sys.exit(main())
