#!/usr/bin/env python3
"""Checks deploy/compose.yaml without a Docker engine (run by deploy/validate.sh).

1. Schema: the file, as written and after interpolation with .env.example's values and
   with the built-in defaults, against the Compose JSON schema (vendored:
   deploy/compose-spec/compose-spec.json) with the `jsonschema` library.
2. Semantics: every service has CPU, memory and pids caps (with the defaults of deploy/README.md's table; the
   pids cap both as pids_limit and as deploy.resources.limits.pids, which Compose v2
   requires to be equal), a
   health check and `restart: unless-stopped`; every environment variable a service sets
   is one its program reads (server and AI: core/src/vocabulary/config.rs SETTINGS; proxy: the
   Caddyfile's {$VAR}s), and every setting is wired; the networks isolate the AI service
   and the server trusts exactly the proxy's fixed address; .env.example lists every
   variable compose uses and every setting, with the programs' defaults; the Dockerfiles
   (with their ARGs' defaults) build from rust:1.95, copy files that exist, run as a
   non-root user and declare every build argument deploy/smoke/compose.yaml sets; images
   are tagged with WIZARD_VERSION (default: the workspace version of Cargo.toml) and get
   the build arguments of their OCI labels, which every Dockerfile sets in its final
   stage whatever base the build arguments select (and no Dockerfile has a `# syntax=`
   line, which would need Docker Hub).
3. Self-test: broken variants of the file must fail the checks, so they are known to bite.

4. deploy/compose.shards.yaml (the sharded deployment): the schema as above; every service
   capped (pids in both forms), checked and hardened; 3 shards or more, each two
   wizard-server processes with the same SHARD_ID on
   STORE=postgres://wizard:${POSTGRES_PASSWORD:?...}@postgres:5432/wizard, every setting
   wired; one AI service per shard through HAProxy, off the store's network; PostgreSQL
   built by the project (Dockerfile.postgres, no registry image), requiring the same
   POSTGRES_PASSWORD, no `trust`, no capability back; haproxy.cfg and shards.map naming
   every shard; only Caddy publishing ports; and its own self-test.

Usage: validate_compose.py REPO_ROOT SCHEMA_JSON
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re
import sys
import tomllib
from pathlib import Path

import jsonschema
import yaml

SERVICES = ("wizard_server", "wizard_ai", "wizard_proxy")

# The containers' caps (deploy/README.md's table of services): (cpus, memory, pids) and the .env variables that set them.
CAPS = {
    "wizard_server": (("SERVER_CPUS", "1.0"), ("SERVER_MEMORY", "512M"), ("SERVER_PIDS", "256")),
    "wizard_ai": (("AI_CPUS", "1.0"), ("AI_MEMORY", "1G"), ("AI_PIDS", "256")),
    "wizard_proxy": (("PROXY_CPUS", "0.25"), ("PROXY_MEMORY", "64M"), ("PROXY_PIDS", "64")),
}

# Settings that compose.yaml sets to a fixed value instead of reading them from .env.
FIXED = {
    "wizard_server": {"BIND", "EMBEDDED_AI", "TRUSTED_PROXIES", "AI_SHARED_SECRET", "STORE"},
    "wizard_ai": {"AI_SERVER_URL", "AI_SHARED_SECRET"},
}

# Settings whose value in .env.example deliberately differs from the program's default.
ENV_EXAMPLE_OVERRIDES = {"AI_WORKERS": ""}

# Deployment variables of .env.example that are not program settings.
# Build arguments of the images (their OCI labels), with their defaults; None: the
# workspace version. Deployment variables too: compose.yaml passes them to every build.
BUILD_ARGS = {"WIZARD_VERSION": None, "WIZARD_COMMIT": "", "WIZARD_CREATED": "", "WIZARD_SOURCE": ""}

# The OCI labels every image sets in its final stage: label -> the build argument it
# holds (None: a fixed text; "license": the workspace's licence).
OCI_LABELS = {
    "title": None, "description": None, "licenses": "license",
    "version": "WIZARD_VERSION", "revision": "WIZARD_COMMIT",
    "created": "WIZARD_CREATED", "source": "WIZARD_SOURCE",
}

DEPLOY_VARS = {
    "SITE_ADDRESS", "HTTP_PORT", "HTTPS_PORT", "EDGE_SUBNET", "PROXY_ADDRESS",
    "SERVER_STOP_GRACE", *BUILD_ARGS,
}

COMPONENT_OF = {"server": "wizard_server", "ai": "wizard_ai"}


# ---------------------------------------------------------------- reading the inputs


def read_settings(config_rs: Path) -> dict[str, dict[str, str]]:
    """SETTINGS from core/src/vocabulary/config.rs: {service: {name: default}}."""
    text = config_rs.read_text()
    start = text.index("pub const SETTINGS")
    body = text[start : text.index("];", start)]
    rows = re.findall(r'\b(server|ai)\(\s*"([A-Z0-9_]+)"\s*,\s*"([^"]*)"\s*,', body)
    if len(rows) < 40:
        raise SystemExit(f"could not parse SETTINGS in {config_rs}: found {len(rows)} rows")
    out: dict[str, dict[str, str]] = {"wizard_server": {}, "wizard_ai": {}}
    for component, name, default in rows:
        out[COMPONENT_OF[component]][name] = default
    return out


def read_env_example(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(active NAME=value lines, commented '# NAME=value' lines)."""
    active: dict[str, str] = {}
    commented: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line)
        if m:
            if m.group(1) in active:
                raise SystemExit(f"{path}: {m.group(1)} is set twice")
            active[m.group(1)] = m.group(2)
            continue
        m = re.fullmatch(r"#\s?([A-Z][A-Z0-9_]*)=(\S*)", line)
        if m:
            commented[m.group(1)] = m.group(2)
    return active, commented


def workspace_package(cargo_toml: Path) -> tuple[str, str]:
    """(version, license) of [workspace.package] in the root Cargo.toml."""
    package = tomllib.loads(cargo_toml.read_text())["workspace"]["package"]
    return package["version"], package.get("license", "")


def dockerfile_label_errors(name: str, text: str, version: str, license: str) -> list[str]:
    """The directives, build arguments and OCI labels of a Dockerfile's final stage."""
    errors: list[str] = []
    lines = re.sub(r"\\\n", " ", text).splitlines()
    if any(re.match(r"#\s*syntax\s*=", l.strip(), re.I) for l in lines):
        errors.append(f"{name}: a `# syntax=` directive pulls the Dockerfile frontend from Docker Hub")
    starts = [i for i, l in enumerate(lines) if l.strip().upper().startswith("FROM ")]
    final = [l.strip() for l in lines[starts[-1]:]] if starts else []
    args: dict[str, str] = {}
    for l in final:
        m = re.fullmatch(r"ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?", l, re.I)
        if m:
            args[m.group(1)] = m.group(2) or ""
    labels = dict(re.findall(r'org\.opencontainers\.image\.([a-z.]+)="([^"]*)"',
                             " ".join(l for l in final if l.upper().startswith("LABEL "))))
    for arg, default in BUILD_ARGS.items():
        want = version if default is None else default
        if arg not in args:
            errors.append(f"{name}: the final stage does not declare ARG {arg}")
        elif args[arg] != want:
            errors.append(f"{name}: ARG {arg} defaults to {args[arg]!r}, expected {want!r}")
    for key, source in OCI_LABELS.items():
        value = labels.get(key)
        if value is None:
            errors.append(f"{name}: no label org.opencontainers.image.{key}")
        elif source == "license":
            if value != license:
                errors.append(f"{name}: licenses label {value!r}, the workspace says {license!r}")
        elif source and value not in (f"${source}", f"${{{source}}}"):
            errors.append(f"{name}: label org.opencontainers.image.{key} is {value!r}, expected ${source}")
        elif not source and not value:
            errors.append(f"{name}: label org.opencontainers.image.{key} is empty")
    return errors


def caddy_vars(caddyfile: Path) -> set[str]:
    return set(re.findall(r"\{\$([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}", caddyfile.read_text()))


# ---------------------------------------------------------------- interpolation

# Variables the files require (${VAR:?...}), with stand-in values for the checks.
REQUIRED_SECRETS = {"AI_SHARED_SECRET": "0123456789abcdef", "POSTGRES_PASSWORD": "0123456789abcdef0123"}

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


class InterpolationError(Exception):
    pass


def interpolate_str(s: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err}, ${VAR?err}, $$."""
    if re.search(r"\$(?![{$])", s.replace("$$", "")):
        raise InterpolationError(f"bare $VAR in {s!r}: write ${{VAR}}")

    def one(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        value = env.get(name)
        unset_or_empty = value is None or value == ""
        if op == ":-":
            return arg if unset_or_empty else value  # type: ignore[return-value]
        if op == "-":
            return arg if value is None else value
        if op == ":?":
            if unset_or_empty:
                raise InterpolationError(f"{name}: {arg}")
            return value  # type: ignore[return-value]
        if op == "?":
            if value is None:
                raise InterpolationError(f"{name}: {arg}")
            return value
        return value or ""

    parts = s.split("$$")
    return "$".join(VAR.sub(one, p) for p in parts)


def interpolate(node, env: dict[str, str]):
    if isinstance(node, dict):
        return {k: interpolate(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolate(v, env) for v in node]
    if isinstance(node, str):
        return interpolate_str(node, env)
    return node


def variables(node) -> dict[str, list[tuple[str, str]]]:
    """Every ${VAR...} in the file: {name: [(operator, argument), ...]}."""
    found: dict[str, list[tuple[str, str]]] = {}

    def walk(n):
        if isinstance(n, dict):
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)
        elif isinstance(n, str):
            for m in VAR.finditer(n):
                found.setdefault(m.group(1), []).append((m.group(2) or "", m.group(3) or ""))

    walk(node)
    return found


# ---------------------------------------------------------------- value parsers


def parse_memory(text: str) -> int | None:
    """Bytes of a Docker memory value (units.RAMInBytes): 512M, 1G, 64m, 1gb, 1024."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?) ?([kKmMgGtTpP])?[iI]?[bB]?", str(text).strip())
    if not m:
        return None
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
    return int(float(m.group(1)) * scale[(m.group(2) or "").lower()])


def parse_duration(text: str) -> float | None:
    """Seconds of a Go duration as Compose writes them: 20s, 1m30s, 500ms."""
    text = str(text).strip()
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        return None
    unit = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    return sum(float(a) * unit[b] for a, b in parts)


# ---------------------------------------------------------------- the checks


class Checks:
    def __init__(self, root: Path, schema: dict):
        self.root = root
        self.deploy = root / "deploy"
        self.schema = schema
        self.settings = read_settings(root / "core" / "src" / "vocabulary" / "config.rs")
        self.env_active, self.env_commented = read_env_example(self.deploy / ".env.example")
        self.caddy_vars = caddy_vars(self.deploy / "Caddyfile")
        self.version, self.license = workspace_package(root / "Cargo.toml")
        self.smoke_args = self.read_smoke_args()

    # -- schema

    def schema_errors(self, doc, label: str) -> list[str]:
        validator = jsonschema.Draft7Validator(
            self.schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
        )
        errors = []
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in e.absolute_path) or "(top)"
            errors.append(f"schema ({label}): {where}: {e.message}")
        return errors

    def schema_all(self, raw) -> list[str]:
        errors = self.schema_errors(raw, "as written")
        env = dict(self.env_active)
        env.update(REQUIRED_SECRETS)
        try:
            errors += self.schema_errors(interpolate(raw, env), "with .env.example")
        except InterpolationError as e:
            errors.append(f"interpolation with .env.example: {e}")
        try:
            defaults_only = interpolate(raw, dict(REQUIRED_SECRETS))
            errors += self.schema_errors(defaults_only, "with defaults only")
        except InterpolationError as e:
            errors.append(f"interpolation with defaults only: {e}")
        return errors

    # -- semantics

    def semantic(self, raw) -> list[str]:
        errors: list[str] = []
        err = errors.append
        services = raw.get("services") or {}
        if set(services) != set(SERVICES):
            err(f"services are {sorted(services)}, expected {sorted(SERVICES)}")
        env = dict(self.env_active)
        env["AI_SHARED_SECRET"] = "0123456789abcdef"
        try:
            resolved = interpolate(raw, env)
        except InterpolationError as e:
            return errors + [f"interpolation: {e}"]
        # Without the secret the deployment must refuse to start.
        try:
            interpolate(raw, {k: v for k, v in env.items() if k != "AI_SHARED_SECRET"})
            err("compose.yaml interpolates without AI_SHARED_SECRET: it must be required (${AI_SHARED_SECRET:?...})")
        except InterpolationError as e:
            if not str(e).startswith("AI_SHARED_SECRET"):
                err(f"interpolation without the secret failed for another reason: {e}")

        for name in SERVICES:
            svc = services.get(name)
            rsvc = resolved.get("services", {}).get(name)
            if not isinstance(svc, dict) or not isinstance(rsvc, dict):
                continue
            errors += self.service_caps(name, svc, rsvc)
            errors += self.service_health(name, svc)
            if svc.get("restart") != "unless-stopped":
                err(f"{name}: restart is {svc.get('restart')!r}, expected unless-stopped")
            if "privileged" in svc or svc.get("network_mode") == "host":
                err(f"{name}: privileged or host network")
            if "ALL" not in (svc.get("cap_drop") or []):
                err(f"{name}: cap_drop must contain ALL")
            extra_caps = set(svc.get("cap_add") or [])
            allowed_caps = {"NET_BIND_SERVICE"} if name == "wizard_proxy" else set()
            if extra_caps - allowed_caps:
                err(f"{name}: cap_add {sorted(extra_caps - allowed_caps)} is not needed")
            if "no-new-privileges:true" not in (svc.get("security_opt") or []):
                err(f"{name}: security_opt must contain no-new-privileges:true")
            errors += self.service_env(name, svc, rsvc)
            errors += self.dockerfile(name, svc)
            errors += self.image(name, svc)

        errors += self.networks(raw, resolved)
        errors += self.env_example(raw)
        grace = parse_duration(resolved["services"]["wizard_server"].get("stop_grace_period", "10s"))
        shutdown = float(resolved["services"]["wizard_server"]["environment"].get("SHUTDOWN_GRACE") or 10)
        if grace is None or grace < shutdown + 5:
            err(f"wizard_server: stop_grace_period ({grace} s) must exceed SHUTDOWN_GRACE ({shutdown} s) by 5 s")
        return errors

    def service_caps(self, name: str, svc: dict, rsvc: dict) -> list[str]:
        errors: list[str] = []
        limits = ((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        (cpu_var, cpu_default), (mem_var, mem_default), (pids_var, pids_default) = CAPS[name]
        for key, var, default, value in (
            ("deploy.resources.limits.cpus", cpu_var, cpu_default, limits.get("cpus")),
            ("deploy.resources.limits.memory", mem_var, mem_default, limits.get("memory")),
            ("pids_limit", pids_var, pids_default, svc.get("pids_limit")),
        ):
            expected = f"${{{var}:-{default}}}"
            if value != expected:
                errors.append(f"{name}: {key} is {value!r}, expected {expected!r}")
        return errors + caps_errors(name, svc, rsvc)

    def service_health(self, name: str, svc: dict) -> list[str]:
        errors: list[str] = []
        hc = svc.get("healthcheck") or {}
        test = hc.get("test")
        if not test or hc.get("disable") in (True, "true") or test in (["NONE"], "NONE"):
            return [f"{name}: no health check"]
        words = test if isinstance(test, list) else ["CMD-SHELL", test]
        if words[0] not in ("CMD", "CMD-SHELL"):
            errors.append(f"{name}: health check test must start with CMD or CMD-SHELL")
        for key in ("interval", "timeout"):
            if parse_duration(hc.get(key, "")) is None:
                errors.append(f"{name}: health check {key} missing or not a duration")
        if parse_duration(hc.get("timeout", "30s") or "30s") >= parse_duration(hc.get("interval", "30s") or "30s"):
            errors.append(f"{name}: health check timeout must be shorter than its interval")
        line = " ".join(words)
        if name == "wizard_server" and "wizard-healthcheck" not in line:
            errors.append(f"{name}: health check must run wizard-healthcheck (GET /health)")
        if name == "wizard_proxy" and "/health" not in line:
            errors.append(f"{name}: health check must ask /health")
        return errors

    def service_env(self, name: str, svc: dict, rsvc: dict) -> list[str]:
        errors: list[str] = []
        envs = svc.get("environment") or {}
        if isinstance(envs, list):
            return [f"{name}: environment must be a mapping (NAME: value)"]
        if "env_file" in svc:
            errors.append(f"{name}: env_file would pass variables unchecked; set environment explicitly")
        if name == "wizard_proxy":
            unknown = set(envs) - self.caddy_vars
            if unknown:
                errors.append(f"{name}: sets {sorted(unknown)}, which the Caddyfile does not read")
            return errors
        settings = self.settings[name]
        unknown = set(envs) - set(settings)
        if unknown:
            errors.append(f"{name}: sets {sorted(unknown)}, which {name} does not read (core/src/vocabulary/config.rs SETTINGS)")
        missing = set(settings) - set(envs)
        if missing:
            errors.append(f"{name}: does not wire {sorted(missing)} (every setting is set or read from .env)")
        for var, value in envs.items():
            if var in FIXED[name] or var not in settings:
                continue
            default = ENV_EXAMPLE_OVERRIDES.get(var, settings[var])
            expected = f"${{{var}:-{default}}}"
            if value != expected:
                errors.append(f"{name}: {var} is {value!r}, expected {expected!r} (from .env, the program's default)")
        renv = rsvc.get("environment") or {}
        if name == "wizard_server":
            if str(renv.get("EMBEDDED_AI")) != "0":
                errors.append("wizard_server: EMBEDDED_AI must be 0 (the AI runs in wizard_ai)")
            if not str(envs.get("AI_SHARED_SECRET", "")).startswith("${AI_SHARED_SECRET:?"):
                errors.append("wizard_server: AI_SHARED_SECRET must be required: ${AI_SHARED_SECRET:?...}")
            port = str(renv.get("BIND", "")).rsplit(":", 1)[-1]
            if port != "8000":
                errors.append("wizard_server: BIND must listen on port 8000 (the proxy and the AI use it)")
        if name == "wizard_ai":
            if renv.get("AI_SERVER_URL") != "ws://wizard_server:8000/internal/ai":
                errors.append("wizard_ai: AI_SERVER_URL must be ws://wizard_server:8000/internal/ai")
            if not str(envs.get("AI_SHARED_SECRET", "")).startswith("${AI_SHARED_SECRET:?"):
                errors.append("wizard_ai: AI_SHARED_SECRET must be required: ${AI_SHARED_SECRET:?...}")
        return errors

    def networks(self, raw: dict, resolved: dict) -> list[str]:
        errors: list[str] = []
        err = errors.append
        nets = raw.get("networks") or {}
        internal = nets.get("internal") or {}
        edge = nets.get("edge") or {}
        if internal.get("internal") is not True:
            err("networks.internal must be internal: true (no route out)")
        if edge.get("internal") is True:
            err("networks.edge must not be internal: the proxy publishes ports")
        svcs = resolved.get("services", {})

        def joined(name):
            n = svcs.get(name, {}).get("networks") or {}
            return set(n) if isinstance(n, (dict, list)) else set()

        if joined("wizard_server") != {"internal", "edge"}:
            err("wizard_server must join exactly internal and edge")
        if joined("wizard_ai") != {"internal"}:
            err("wizard_ai must join only internal")
        if joined("wizard_proxy") != {"edge"}:
            err("wizard_proxy must join only edge")
        for name in ("wizard_server", "wizard_ai"):
            if svcs.get(name, {}).get("ports") or svcs.get(name, {}).get("network_mode"):
                err(f"{name} must not publish ports (only the proxy does)")
        ports = " ".join(str(p) for p in svcs.get("wizard_proxy", {}).get("ports") or [])
        if not re.search(r":80\b", ports) or not re.search(r":443\b", ports):
            err("wizard_proxy must publish ports 80 and 443")
        try:
            subnets = ((resolved["networks"]["edge"].get("ipam") or {}).get("config") or [])
            subnet = ipaddress.ip_network(subnets[0]["subnet"])
            address = ipaddress.ip_address(
                svcs["wizard_proxy"]["networks"]["edge"]["ipv4_address"]
            )
            if address not in subnet:
                err(f"the proxy's address {address} is not in the edge subnet {subnet}")
            trusted = str(svcs["wizard_server"]["environment"]["TRUSTED_PROXIES"])
            if ipaddress.ip_address(trusted) != address:
                err(f"TRUSTED_PROXIES ({trusted}) is not the proxy's address ({address})")
        except (KeyError, IndexError, TypeError, ValueError) as e:
            err(f"edge subnet, proxy address or TRUSTED_PROXIES missing or malformed: {e!r}")
        return errors

    def env_example(self, raw: dict) -> list[str]:
        errors: list[str] = []
        err = errors.append
        used = variables(raw)
        active, commented = self.env_active, self.env_commented
        for var in sorted(set(used) - set(active)):
            err(f".env.example does not list {var}, which compose.yaml uses")
        for var in sorted(set(active) - set(used)):
            err(f".env.example sets {var}, which compose.yaml does not use")
        for var, uses in used.items():
            for op, arg in uses:
                if op in (":?", "?"):
                    continue
                if op not in (":-", "-"):
                    err(f"compose.yaml: ${{{var}}} has no default; write ${{{var}:-default}}")
                elif var in active and arg != active[var]:
                    err(f"compose.yaml: default of {var} is {arg!r}, .env.example says {active[var]!r}")
        all_settings: dict[str, str] = {}
        for service in ("wizard_server", "wizard_ai"):
            all_settings.update(self.settings[service])
        for var, default in sorted(all_settings.items()):
            expected = ENV_EXAMPLE_OVERRIDES.get(var, default)
            if var in active:
                if active[var] != expected:
                    err(f".env.example: {var}={active[var]!r}, the program's default is {expected!r}")
            elif var in commented:
                if commented[var] != default:
                    err(f".env.example: # {var}={commented[var]!r}, the program's default is {default!r}")
            else:
                err(f".env.example does not list the setting {var}")
        for service, caps in CAPS.items():
            for var, default in caps:
                if active.get(var) != default:
                    err(f".env.example: {var} should default to {default} (the documented cap for {service}: deploy/README.md)")
        known = set(all_settings) | DEPLOY_VARS | {v for caps in CAPS.values() for v, _ in caps}
        for var in sorted(set(active) - known):
            err(f".env.example: {var} is neither a setting, a cap nor a deployment variable")
        return errors

    def image(self, name: str, svc: dict) -> list[str]:
        """The tag and the build arguments of the image's labels, and the labels."""
        errors: list[str] = []
        tag = f"{name.replace('_', '-')}:${{WIZARD_VERSION:-{self.version}}}"
        if svc.get("image") != tag:
            errors.append(f"{name}: image is {svc.get('image')!r}, expected {tag!r}")
        build = svc.get("build") if isinstance(svc.get("build"), dict) else {}
        args = build.get("args") or {}
        if not isinstance(args, dict):
            return errors + [f"{name}: build.args must be a mapping (NAME: value)"]
        for arg, default in BUILD_ARGS.items():
            expected = f"${{{arg}:-{self.version if default is None else default}}}"
            if args.get(arg) != expected:
                errors.append(f"{name}: build.args.{arg} is {args.get(arg)!r}, expected {expected!r}")
        path = self.root / "deploy" / Path(str(build.get("dockerfile", ""))).name
        if path.is_file():
            errors += dockerfile_label_errors(path.name, path.read_text(), self.version, self.license)
        return errors

    def dockerfile(self, name: str, svc: dict) -> list[str]:
        errors: list[str] = []
        build = svc.get("build") or {}
        if not isinstance(build, dict) or "dockerfile" not in build:
            return [f"{name}: build.dockerfile missing"]
        context = (self.deploy / build.get("context", ".")).resolve()
        if context != self.root.resolve():
            errors.append(f"{name}: build context must be the repository root (..)")
        path = context / build["dockerfile"]
        if not path.is_file():
            return errors + [f"{name}: {path} does not exist"]
        if not Path(str(path) + ".dockerignore").is_file():
            errors.append(f"{name}: {path.name}.dockerignore missing (target/ would be sent as context)")
        text = re.sub(r"\\\n", " ", path.read_text())
        lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
        stages = [l for l in lines if l.upper().startswith("FROM ")]
        if len(stages) < 2:
            errors.append(f"{path.name}: not a multi-stage build")
        global_args = dockerfile_global_args(lines)
        bases = stage_bases(stages, global_args)
        final_from = bases[-1] if bases else ""
        allowed = ("gcr.io/distroless/", "debian:bookworm-slim", "caddy:2-alpine")
        if not final_from.startswith(allowed):
            errors.append(f"{path.name}: runtime image {final_from} is not one of {allowed}")
        final = lines[lines.index(stages[-1]):] if stages else []
        users = [l.split()[1] for l in final if l.upper().startswith("USER ")]
        if not users or users[-1].split(":")[0] in ("root", "0"):
            errors.append(f"{path.name}: the runtime stage must switch to a non-root USER")
        for stage in stages:
            image = stage.split()[1]
            if image.startswith("rust:") and not image.startswith("rust:1.95"):
                errors.append(f"{path.name}: builder {image} is not pinned to rust 1.95")
        if name != "wizard_proxy" and not any(s.split()[1].startswith("rust:1.95") for s in stages):
            errors.append(f"{path.name}: no rust:1.95 builder stage")
        # deploy/smoke.sh builds with these arguments (deploy/smoke/compose.yaml): each
        # must be an ARG before the first FROM, or the smoke build silently ignores it.
        for arg in sorted(self.smoke_args.get(name, {})):
            if arg not in global_args:
                errors.append(f"{path.name}: deploy/smoke/compose.yaml sets build arg {arg}, not an ARG before the first FROM")
        for line in lines:
            words = line.split()
            if words[0].upper() == "COPY" and not any(w.startswith("--from") for w in words):
                for src in [w for w in words[1:-1] if not w.startswith("--")]:
                    if src != "." and not (context / src).exists():
                        errors.append(f"{path.name}: COPY source {src} does not exist")
        for binary in re.findall(r"--bin\s+([\w-]+)", text):
            if not self.binary_exists(binary):
                errors.append(f"{path.name}: no binary target {binary} in the workspace")
        hc = " ".join((svc.get("healthcheck") or {}).get("test") or [])
        for tool in re.findall(r"(/usr/local/bin/[\w-]+)", hc):
            if tool not in text:
                errors.append(f"{name}: health check runs {tool}, which {path.name} does not install")
        return errors

    def read_smoke_args(self) -> dict[str, dict]:
        path = self.deploy / "smoke" / "compose.yaml"
        if not path.is_file():
            return {}
        doc = yaml.safe_load(path.read_text()) or {}
        return {
            name: ((svc or {}).get("build") or {}).get("args") or {}
            for name, svc in (doc.get("services") or {}).items()
        }

    def binary_exists(self, binary: str) -> bool:
        for manifest in self.root.glob("*/Cargo.toml"):
            crate = manifest.parent
            if (crate / "src" / "bin" / f"{binary}.rs").is_file():
                return True
            if re.search(rf'name\s*=\s*"{re.escape(binary)}"', manifest.read_text()) and "[[bin]]" in manifest.read_text():
                return True
        return False


# ---------------------------------------------------------------- Dockerfiles


def dockerfile_global_args(lines: list[str]) -> dict[str, str]:
    """The ARGs before the first FROM, with their defaults ('' when none)."""
    args: dict[str, str] = {}
    for line in lines:
        words = line.split(None, 1)
        if words[0].upper() == "FROM":
            break
        if words[0].upper() == "ARG" and len(words) > 1:
            name, _, default = words[1].partition("=")
            args[name.strip()] = default.strip().strip('"')
    return args


def stage_bases(stages: list[str], args: dict[str, str]) -> list[str]:
    """Each FROM's image with the global ARGs' defaults put in, a stage name followed to
    the image it starts from: what a build with no --build-arg runs on."""
    by_alias: dict[str, str] = {}
    bases = []
    for stage in stages:
        words = stage.split()
        words = [w for w in words[1:] if not w.startswith("--")]
        image = re.sub(
            r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: args.get(m.group(1), ""), words[0]
        )
        base = by_alias.get(image.lower(), image)
        if len(words) >= 3 and words[1].upper() == "AS":
            by_alias[words[2].lower()] = base
        bases.append(base)
    return bases


# ---------------------------------------------------------------- self-test


def mutations(raw: dict):
    """Broken variants of the file, each of which the checks must reject."""

    def variant(label, edit):
        doc = copy.deepcopy(raw)
        edit(doc)
        return label, doc

    s = "services"
    yield variant("server without pids_limit", lambda d: d[s]["wizard_server"].pop("pids_limit"))
    yield variant("AI without memory cap", lambda d: d[s]["wizard_ai"]["deploy"]["resources"]["limits"].pop("memory"))
    yield variant("proxy without CPU cap", lambda d: d[s]["wizard_proxy"]["deploy"]["resources"]["limits"].pop("cpus"))
    yield variant("proxy without health check", lambda d: d[s]["wizard_proxy"].pop("healthcheck"))
    yield variant("server sets an unknown variable", lambda d: d[s]["wizard_server"]["environment"].update(MAX_PLAYERS="9"))
    yield variant("AI sets a server setting", lambda d: d[s]["wizard_ai"]["environment"].update(MAX_LOBBIES="9"))
    yield variant("internal network not internal", lambda d: d["networks"]["internal"].pop("internal"))
    yield variant("AI on the edge network", lambda d: d[s]["wizard_ai"]["networks"].update(edge={}))
    yield variant("embedded AI", lambda d: d[s]["wizard_server"]["environment"].update(EMBEDDED_AI="1"))
    yield variant("restart always", lambda d: d[s]["wizard_ai"].update(restart="always"))
    yield variant("optional secret", lambda d: d[s]["wizard_server"]["environment"].update(AI_SHARED_SECRET="${AI_SHARED_SECRET:-}"))
    yield variant("trusting another address", lambda d: d[s]["wizard_server"]["environment"].update(TRUSTED_PROXIES="10.0.0.0/8"))
    yield variant("cap_add SYS_ADMIN", lambda d: d[s]["wizard_server"].update(cap_add=["SYS_ADMIN"]))
    yield variant("schema: unknown service key", lambda d: d[s]["wizard_server"].update(cpu_limit="1"))
    yield variant("pids_limit without deploy.resources.limits.pids",
                  lambda d: d[s]["wizard_ai"]["deploy"]["resources"]["limits"].pop("pids"))
    yield variant("image tagged latest", lambda d: d[s]["wizard_ai"].update(image="wizard-ai:latest"))
    yield variant("no version build argument", lambda d: d[s]["wizard_proxy"]["build"].update(
        args={k: v for k, v in d[s]["wizard_proxy"]["build"]["args"].items() if k != "WIZARD_VERSION"}))


def dockerfile_mutations(text: str):
    """Broken variants of a Dockerfile's labels, each of which the checks must reject."""
    yield "a # syntax= line", "# syntax=docker/dockerfile:1\n" + text
    yield "no version label", re.sub(r"org\.opencontainers\.image\.version=\S+", "", text)
    yield "revision label not from WIZARD_COMMIT", text.replace('revision="$WIZARD_COMMIT"', 'revision="main"')
    yield "another version by default", text.replace("ARG WIZARD_VERSION=", "ARG WIZARD_VERSION=9")
    yield "no LABEL in the final stage", re.sub(r"(?s)\nLABEL .*", "\n", text)
    # The labels in the stage before the last FROM: a build whose build arguments pick
    # another base or flavour (RUNTIME_IMAGE, CADDY_FLAVOR, BINARIES) would miss them.
    cut = text.rfind("\nARG WIZARD_VERSION")
    last_from = text.rfind("\nFROM ", 0, cut)
    yield "labels in a stage before the final one", text[:last_from] + text[cut:] + text[last_from:cut]


# ---------------------------------------------------------------- compose.shards.yaml

SHARD_FILE = "compose.shards.yaml"
# The store every shard process uses (PROTOCOL.md 6.3; h20's PostgreSQL store), as
# written: the password from .env, required; and as resolved with REQUIRED_SECRETS.
SHARD_STORE_RAW = re.compile(r"postgres://wizard:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432/wizard")
SHARD_STORE = "postgres://wizard:{POSTGRES_PASSWORD}@postgres:5432/wizard"
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def caps_errors(name: str, svc: dict, rsvc: dict) -> list[str]:
    """CPU, memory (and swap) and pids caps, the pids cap in both forms, equal."""
    errors: list[str] = []
    limits = ((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
    rlimits = ((rsvc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
    try:
        if not 0 < float(rlimits.get("cpus")) <= 64:
            raise ValueError
    except (TypeError, ValueError):
        errors.append(f"{name}: CPU cap {rlimits.get('cpus')!r} is not a positive number of CPUs")
    memory = parse_memory(rlimits.get("memory", ""))
    if not memory or memory < 16 << 20:
        errors.append(f"{name}: memory cap {rlimits.get('memory')!r} is missing or below 16M")
    if svc.get("memswap_limit") != limits.get("memory"):
        errors.append(f"{name}: memswap_limit must equal the memory cap (no swap beyond it)")
    pids = str(rsvc.get("pids_limit", ""))
    if not pids.isdigit() or int(pids) < 16:
        errors.append(f"{name}: pids cap {pids!r} is not a number of at least 16")
    if str(limits.get("pids")) != str(svc.get("pids_limit")):
        # Compose v2 (compose-go's consistency check, 2024) refuses the project when they
        # differ ("can't set distinct values"), and a missing deploy.resources.limits.pids
        # counts as different.
        errors.append(f"{name}: deploy.resources.limits.pids must equal pids_limit")
    return errors


def shard_semantic(checks: "Checks", raw) -> list[str]:
    """compose.shards.yaml: every service capped, checked and hardened as in compose.yaml;
    at least 3 shards of two processes each (the same SHARD_ID) on the PostgreSQL store,
    one AI service per shard through HAProxy, HAProxy's configuration naming every shard
    process, and only Caddy publishing ports."""
    errors: list[str] = []
    err = errors.append
    env = dict(checks.env_active)
    env.update(REQUIRED_SECRETS)
    try:
        resolved = interpolate(raw, env)
    except InterpolationError as e:
        return [f"{SHARD_FILE}: interpolation: {e}"]
    # Without the store's password the deployment must refuse to start.
    try:
        interpolate(raw, {k: v for k, v in env.items() if k != "POSTGRES_PASSWORD"})
        err(f"{SHARD_FILE} interpolates without POSTGRES_PASSWORD: it must be required (${{POSTGRES_PASSWORD:?...}})")
    except InterpolationError as e:
        if not str(e).startswith("POSTGRES_PASSWORD"):
            err(f"{SHARD_FILE}: interpolation without the store's password failed for another reason: {e}")
    services = raw.get("services") or {}
    rservices = resolved.get("services") or {}
    haproxy_cfg = (checks.deploy / "haproxy.cfg").read_text()
    shard_map = (checks.deploy / "shards.map").read_text()
    processes: dict[str, list[str]] = {}
    ai_for: dict[str, list[str]] = {}
    for name, svc in services.items():
        rsvc = rservices.get(name) or {}
        where = f"{SHARD_FILE} {name}"
        errors += caps_errors(where, svc, rsvc)
        errors += checks.service_health(where, svc)
        if svc.get("restart") != "unless-stopped":
            err(f"{where}: restart is {svc.get('restart')!r}, expected unless-stopped")
        if "privileged" in svc or svc.get("network_mode") == "host":
            err(f"{where}: privileged or host network")
        if "ALL" not in (svc.get("cap_drop") or []):
            err(f"{where}: cap_drop must contain ALL")
        if "no-new-privileges:true" not in (svc.get("security_opt") or []):
            err(f"{where}: security_opt must contain no-new-privileges:true")
        if svc.get("ports") and name != "wizard_proxy":
            err(f"{where}: publishes ports (only wizard_proxy may)")
        envs = rsvc.get("environment") or {}
        image = str(svc.get("image", ""))
        if image.startswith("wizard-server:"):
            settings = checks.settings["wizard_server"]
            unknown = set(envs) - set(settings)
            missing = set(settings) - set(envs)
            if unknown:
                err(f"{where}: sets {sorted(unknown)}, which wizard-server does not read")
            if missing:
                err(f"{where}: does not wire {sorted(missing)}")
            raw_store = str(((svc.get("environment") or {}).get("STORE")) or "")
            if not SHARD_STORE_RAW.fullmatch(raw_store) or envs.get("STORE") != SHARD_STORE.format(**REQUIRED_SECRETS):
                err(f"{where}: STORE is {raw_store!r}, expected postgres://wizard:${{POSTGRES_PASSWORD:?...}}@postgres:5432/wizard")
            if str(envs.get("EMBEDDED_AI")) != "0":
                err(f"{where}: EMBEDDED_AI must be 0 (the shard's AI service plays)")
            if str(envs.get("BIND", "")).rsplit(":", 1)[-1] != "8000":
                err(f"{where}: BIND must listen on port 8000 (haproxy.cfg's default addresses)")
            shard = str(envs.get("SHARD_ID", ""))
            if len(shard) != 1 or shard not in CODE_ALPHABET:
                err(f"{where}: SHARD_ID {shard!r} is not one character of the code alphabet")
            processes.setdefault(shard, []).append(name)
            if f"-{name}:8000}}" not in haproxy_cfg:
                err(f"{where}: haproxy.cfg has no server defaulting to {name}:8000")
        elif image.startswith("wizard-ai:"):
            unknown = set(envs) - set(checks.settings["wizard_ai"])
            if unknown:
                err(f"{where}: sets {sorted(unknown)}, which wizard-ai does not read")
            m = re.fullmatch(r"ws://wizard_haproxy:8001/internal/ai/([A-Z2-9])", str(envs.get("AI_SERVER_URL", "")))
            if not m:
                err(f"{where}: AI_SERVER_URL must be ws://wizard_haproxy:8001/internal/ai/<shard>")
            else:
                ai_for.setdefault(m.group(1), []).append(name)
            if "store" in (svc.get("networks") or {}):
                err(f"{where}: on the store's network (the AI services need HAProxy only, never PostgreSQL)")
        elif name == "postgres":
            errors += postgres_errors(checks, where, svc, rsvc)
        if "store" in (svc.get("networks") or {}) and not image.startswith("wizard-server:") and name != "postgres":
            err(f"{where}: on the store's network, which only the shard processes and PostgreSQL join")
    if len(processes) < 3:
        err(f"{SHARD_FILE}: {len(processes)} shards, expected at least 3")
    for shard, names in sorted(processes.items()):
        if len(names) != 2:
            err(f"{SHARD_FILE}: shard {shard} has {len(names)} processes {names}, expected 2 (serving and standby)")
        if len(ai_for.get(shard, [])) != 1:
            err(f"{SHARD_FILE}: shard {shard} has {len(ai_for.get(shard, []))} AI services, expected 1")
        if f"/ws/{shard} " not in shard_map:
            err(f"shards.map: no route /ws/{shard}")
    if set(ai_for) - set(processes):
        err(f"{SHARD_FILE}: AI services for shards that do not exist: {sorted(set(ai_for) - set(processes))}")
    for name in ("wizard_haproxy", "wizard_proxy", "postgres"):
        if name not in services:
            err(f"{SHARD_FILE}: no {name} service")
    upstream = ((rservices.get("wizard_proxy") or {}).get("environment") or {}).get("WIZARD_UPSTREAM")
    if upstream != "wizard_haproxy:8080":
        err(f"{SHARD_FILE}: Caddy's WIZARD_UPSTREAM is {upstream!r}, expected wizard_haproxy:8080")
    listed = {**checks.env_commented, **checks.env_active}
    for var, uses in variables(raw).items():
        for op, arg in uses:
            if op in (":?", "?"):
                continue
            if op not in (":-", "-"):
                err(f"{SHARD_FILE}: ${{{var}}} has no default; write ${{{var}:-default}}")
            elif var not in listed:
                err(f".env.example does not list {var}, which {SHARD_FILE} uses")
            elif arg != listed[var]:
                err(f"{SHARD_FILE}: default of {var} is {arg!r}, .env.example says {listed[var]!r}")
    text = (checks.deploy / "Dockerfile.haproxy").read_text()
    errors += dockerfile_label_errors("Dockerfile.haproxy", text, checks.version, checks.license)
    return errors


def postgres_errors(checks: "Checks", where: str, svc: dict, rsvc: dict) -> list[str]:
    """PostgreSQL built by the project from Debian's packages (Dockerfile.postgres), as its
    own user with no capability back, requiring the password the shards' STORE carries."""
    errors: list[str] = []
    err = errors.append
    tag = f"wizard-postgres:${{WIZARD_VERSION:-{checks.version}}}"
    if svc.get("image") != tag:
        err(f"{where}: image is {svc.get('image')!r}, expected {tag!r} (built from Dockerfile.postgres, no registry image)")
    build = svc.get("build") if isinstance(svc.get("build"), dict) else {}
    if build.get("dockerfile") != "deploy/Dockerfile.postgres" or build.get("context") != "..":
        err(f"{where}: must build deploy/Dockerfile.postgres with context ..")
    if svc.get("cap_add"):
        err(f"{where}: cap_add {svc.get('cap_add')} (the image runs as postgres from the start: no capability needed)")
    envs = svc.get("environment") or {}
    if not re.fullmatch(r"\$\{POSTGRES_PASSWORD:\?[^}]+\}", str(envs.get("POSTGRES_PASSWORD", ""))):
        err(f"{where}: POSTGRES_PASSWORD must be ${{POSTGRES_PASSWORD:?...}} (required, the shards' STORE password)")
    if (rsvc.get("environment") or {}).get("POSTGRES_USER") != "wizard" or (rsvc.get("environment") or {}).get("POSTGRES_DB") != "wizard":
        err(f"{where}: POSTGRES_USER and POSTGRES_DB must be wizard (the shards' STORE)")
    if any("trust" in str(v).lower() for v in envs.values()) or "POSTGRES_HOST_AUTH_METHOD" in envs:
        err(f"{where}: no trust authentication (POSTGRES_HOST_AUTH_METHOD): the password is required")
    if set(svc.get("networks") or {}) != {"store"}:
        err(f"{where}: networks {sorted(svc.get('networks') or {})}, expected the store's only")
    path = checks.deploy / "Dockerfile.postgres"
    if not path.is_file():
        return errors + [f"{where}: deploy/Dockerfile.postgres does not exist"]
    text = path.read_text()
    errors += dockerfile_label_errors("Dockerfile.postgres", text, checks.version, checks.license)
    for line in re.sub(r"\\\n", " ", text).splitlines():
        words = line.split()
        if words and words[0].upper() == "COPY" and not any(w.startswith("--from") for w in words):
            for src in [w for w in words[1:-1] if not w.startswith("--")]:
                if not (checks.root / src).exists():
                    err(f"Dockerfile.postgres: COPY source {src} does not exist")
    if not re.search(r"^USER\s+postgres\s*$", text, re.M):
        err("Dockerfile.postgres: must run as USER postgres")
    return errors


def shard_mutations(raw: dict):
    """Broken variants of compose.shards.yaml that shard_semantic must reject."""

    def variant(label, edit):
        doc = copy.deepcopy(raw)
        edit(doc["services"])
        return label, doc

    def no_pids(s):
        s["shard_a_1"]["deploy"] = {"resources": {"limits": {"cpus": "1.0", "memory": "512M"}}}

    def sqlite_store(s):
        s["shard_b_2"]["environment"] = dict(s["shard_b_2"]["environment"], STORE="sqlite:/data/w.db")

    def no_standby(s):
        del s["shard_c_2"]

    def no_health(s):
        s["postgres"] = dict(s["postgres"])
        del s["postgres"]["healthcheck"]

    def stray_ai(s):
        s["wizard_ai_c"]["environment"] = dict(s["wizard_ai_c"]["environment"],
                                                AI_SERVER_URL="ws://wizard_haproxy:8001/internal/ai/Z")

    def published(s):
        s["wizard_haproxy"] = dict(s["wizard_haproxy"], ports=["8080:8080"])

    def registry_postgres(s):
        s["postgres"] = {k: v for k, v in s["postgres"].items() if k != "build"}
        s["postgres"]["image"] = "postgres:15-bookworm"

    def trust(s):
        s["postgres"] = dict(s["postgres"])
        s["postgres"]["environment"] = dict(s["postgres"]["environment"], POSTGRES_HOST_AUTH_METHOD="trust")

    def no_password(s):
        for name in ("shard_a_1", "shard_a_2"):
            s[name] = dict(s[name])
            s[name]["environment"] = dict(s[name]["environment"], STORE="postgres://wizard@postgres:5432/wizard")

    def optional_password(s):
        s["postgres"] = dict(s["postgres"])
        s["postgres"]["environment"] = dict(s["postgres"]["environment"], POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-wizard}")

    def ai_on_store(s):
        s["wizard_ai_b"] = dict(s["wizard_ai_b"], networks={"ai": {}, "store": {}})

    yield variant("a shard without a pids cap", no_pids)
    yield variant("a shard process on SQLite", sqlite_store)
    yield variant("a shard without its standby", no_standby)
    yield variant("PostgreSQL without a health check", no_health)
    yield variant("an AI service for a shard that does not exist", stray_ai)
    yield variant("HAProxy publishing a port", published)
    yield variant("PostgreSQL from a registry image", registry_postgres)
    yield variant("PostgreSQL trusting the network", trust)
    yield variant("a shard's STORE without the password", no_password)
    yield variant("PostgreSQL's password with a default", optional_password)
    yield variant("an AI service on the store's network", ai_on_store)


def main_shards(checks: "Checks", root: Path) -> int:
    raw = yaml.safe_load((root / "deploy" / SHARD_FILE).read_text())
    errors = checks.schema_all(raw) + shard_semantic(checks, raw)
    for e in errors:
        print(f"FAIL {e}")
    shards = sum(1 for s in (raw.get("services") or {}) if s.startswith("shard_"))
    print(f"{SHARD_FILE}: schema and semantics, {len(raw.get('services') or {})} services "
          f"({shards} shard processes): " + ("ok" if not errors else f"{len(errors)} error(s)"))
    bite_failures = 0
    n = 0
    for label, doc in shard_mutations(raw):
        n += 1
        if not (checks.schema_errors(doc, label) + shard_semantic(checks, doc)):
            print(f"FAIL self-test: the checks accept a broken {SHARD_FILE} ({label})")
            bite_failures += 1
    print(f"{SHARD_FILE} self-test: {n - bite_failures} broken variants rejected"
          + (f", {bite_failures} accepted" if bite_failures else ""))
    return 1 if errors or bite_failures else 0


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    schema = json.loads(Path(sys.argv[2]).read_text())
    raw = yaml.safe_load((root / "deploy" / "compose.yaml").read_text())
    checks = Checks(root, schema)

    schema_errors = checks.schema_all(raw)
    semantic_errors = checks.semantic(raw)
    for e in schema_errors + semantic_errors:
        print(f"FAIL {e}")
    n_env = sum(len(v) for v in checks.settings.values())
    print(f"schema: compose.yaml valid as written, with .env.example and with defaults only"
          if not schema_errors else f"schema: {len(schema_errors)} error(s)")
    print(f"semantics: {len(SERVICES)} services, {n_env} settings from config.rs, "
          f"{len(checks.env_active)} variables in .env.example: "
          + ("ok" if not semantic_errors else f"{len(semantic_errors)} error(s)"))

    bite_failures = 0
    for label, doc in mutations(raw):
        found = checks.schema_errors(doc, label) + checks.semantic(doc)
        if not found:
            print(f"FAIL self-test: the checks accept a broken file ({label})")
            bite_failures += 1
    n_broken = sum(1 for _ in mutations(raw))
    for dockerfile in ("Dockerfile.server", "Dockerfile.ai", "Dockerfile.proxy"):
        text = (root / "deploy" / dockerfile).read_text()
        for label, broken in dockerfile_mutations(text):
            n_broken += 1
            if broken == text or not dockerfile_label_errors(dockerfile, broken, checks.version, checks.license):
                print(f"FAIL self-test: the checks accept a broken {dockerfile} ({label})")
                bite_failures += 1
    print(f"self-test: {n_broken - bite_failures} broken variants rejected"
          + (f", {bite_failures} accepted" if bite_failures else ""))
    shards_failed = main_shards(checks, root)
    return 1 if schema_errors or semantic_errors or bite_failures or shards_failed else 0


if __name__ == "__main__":
    sys.exit(main())
