"""compose.yaml runs what the installed package has: every health check and command of its services, as far as a
machine without a Docker engine can run them (none runs here, so no image is built and no container started).

- Every ``python -m MODULE`` a service runs (a health check, a command) names a module of the installed package that
  imports and answers ``--help`` with exit code 0; every ``python -c CODE`` compiles; every ``hindsight-lab``
  command (the image's entry point) parses with the real command line and its subcommand answers ``--help``; the
  ``mlflow`` service's flags are flags of the pinned ``mlflow ui``.
- The configs a memory server loads exist in the repository, read through the service's own bind mount.
- The MLflow service keeps its artifacts in a declared named volume that the image's user owns (the Dockerfile
  creates the folder and gives it to that user), so uploads do not fail with ``PermissionError: './mlartifacts'``.
- The memory services' health-check command, run against a real ``hindsight-lab serve --transport http`` on
  127.0.0.1 with a bearer token, exits 0; without the token, 1 (the negative control).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
import yaml

from hindsight_lab.cli import _build_parser
from hindsight_lab.server.process import ServeProcess

from support import REPO, cli_env

COMPOSE = yaml.safe_load((REPO / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
DOCKERFILE = (REPO / "Dockerfile").read_text()
MEMORY_SERVICES = [name for name, svc in SERVICES.items() if (svc.get("command") or [None])[0] == "serve"]
TOKEN = "compose-test-token-0123456789"


def _dockerfile(keyword: str) -> list[str]:
    """The arguments of every Dockerfile instruction ``keyword``, continuation lines joined."""
    text = re.sub(r"\\\n", " ", "\n".join(ln for ln in DOCKERFILE.splitlines() if not ln.lstrip().startswith("#")))
    return [m[1] for m in re.finditer(rf"^\s*{keyword}\s+(.*)$", text, re.M)]


def _exec_form(value: list[str] | str) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else list(value)


def _argv(name: str) -> list[str]:
    """What the service's container runs: its entry point (the image's when the service names none) and command."""
    svc = SERVICES[name]
    if "image" in svc and "build" not in svc:
        return []  # a third-party image: its entry point is not ours to check
    entry = _exec_form(svc["entrypoint"]) if "entrypoint" in svc else _exec_form(
        yaml.safe_load(_dockerfile("ENTRYPOINT")[-1]))
    return entry + _exec_form(svc.get("command") or yaml.safe_load(_dockerfile("CMD")[-1]))


def _healthcheck(name: str) -> list[str]:
    test = SERVICES[name].get("healthcheck", {}).get("test") or []
    if test[:1] == ["CMD-SHELL"]:
        return ["/bin/sh", "-c", test[1]]
    return list(test[1:])


def _runs() -> list[tuple[str, str, list[str]]]:
    """(service, "healthcheck" | "command", argv) for every command a service runs."""
    out = [(name, "healthcheck", _healthcheck(name)) for name in SERVICES if _healthcheck(name)]
    return out + [(name, "command", _argv(name)) for name in SERVICES if _argv(name)]


def _python_modules(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if argv[0] == "python" and word == "-m"]


def test_every_service_runs_something_this_test_checks() -> None:
    checked = {(name, kind) for name, kind, argv in _runs()
               if _python_modules(argv) or argv[:2] == ["python", "-c"] or argv[0] in ("hindsight-lab", "mlflow")}
    for name in MEMORY_SERVICES:
        assert {(name, "healthcheck"), (name, "command")} <= checked, name
    assert {("mlflow", "healthcheck"), ("mlflow", "command")} <= checked
    assert len(MEMORY_SERVICES) == 2, MEMORY_SERVICES


@pytest.mark.parametrize("name,kind,argv", [r for r in _runs() if _python_modules(r[2])], ids=lambda x: str(x))
def test_python_modules_named_by_compose_exist_in_the_installed_package(name: str, kind: str,
                                                                        argv: list[str]) -> None:
    # Regression: memory-postgres's health check ran hindsight_lab.server.healthcheck after the module had moved to
    # hindsight_lab.cli.healthcheck, so the service never turned healthy.
    for module in _python_modules(argv):
        assert importlib.util.find_spec(module) is not None, f"{name} {kind}: no module named {module}"
        proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                              env=cli_env(), timeout=120)
        assert proc.returncode == 0, f"{name} {kind}: python -m {module} --help exited {proc.returncode}:\n" \
                                     f"{proc.stderr[-2000:]}"


@pytest.mark.parametrize("name,kind,argv", [r for r in _runs() if r[2][:2] == ["python", "-c"]],
                         ids=lambda x: str(x))
def test_python_snippets_named_by_compose_compile(name: str, kind: str, argv: list[str]) -> None:
    compile(argv[2], f"{name} {kind}", "exec")


def _host_path(name: str, container_path: str) -> Path | None:
    """A path inside the service's container, on this machine through the service's bind mounts (a variable's
    default substituted), or None when no bind mount holds it."""
    path = PurePosixPath(re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", container_path))
    mounts = [v.split(":")[:2] for v in SERVICES[name].get("volumes", []) if v.startswith(("./", "/"))]
    return next((REPO / src / path.relative_to(dst) for src, dst in mounts if path.is_relative_to(dst)), None)


@pytest.mark.parametrize("name", MEMORY_SERVICES)
def test_memory_service_commands_parse_and_load_configs_in_the_repository(name: str) -> None:
    argv = _argv(name)
    assert argv[0] == "hindsight-lab", argv
    config = argv[argv.index("--config") + 1]
    host = _host_path(name, config)
    assert host is not None, f"{name}: --config {config} is under no bind mount of the service"
    assert host.is_file(), f"{name}: --config {config} is {host}, which is not in the repository"
    # the command, with the config where this machine sees it, parses with the real command line
    args = _build_parser().parse_args([str(host) if word == config else word for word in argv[1:]])
    proc = subprocess.run([sys.executable, "-m", "hindsight_lab.cli", args.command, "--help"], capture_output=True,
                          text=True, env=cli_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_mlflow_command_flags_exist_in_the_pinned_mlflow() -> None:
    argv = _argv("mlflow")
    assert argv[:2] == ["mlflow", "ui"], argv
    mlflow = Path(sys.executable).with_name("mlflow")
    proc = subprocess.run([str(mlflow), "ui", "--help"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
    assert proc.returncode == 0, proc.stderr
    for flag in (w for w in argv[2:] if w.startswith("--")):
        assert re.search(rf"(^|\s){re.escape(flag)}[\s=,]", proc.stdout), f"mlflow ui has no flag {flag}"


def test_mlflow_artifacts_go_to_a_named_volume_the_image_user_owns() -> None:
    # Regression: without --artifacts-destination the server wrote artifacts to ./mlartifacts in /app (root's), and
    # every upload failed with PermissionError while clients retried.
    argv = _argv("mlflow")
    assert "--artifacts-destination" in argv, argv
    destination = PurePosixPath(argv[argv.index("--artifacts-destination") + 1])
    assert destination.is_absolute(), destination
    mounts = {PurePosixPath(dst): src for src, dst, *_ in (v.split(":") for v in SERVICES["mlflow"]["volumes"])}
    mount = next((dst for dst in mounts if destination.is_relative_to(dst)), None)
    assert mount is not None, f"{destination} is on no volume of the mlflow service: {sorted(map(str, mounts))}"
    assert mounts[mount] in COMPOSE["volumes"], f"{mounts[mount]} is not a declared named volume"
    # the image's user owns the mount point, so a new named volume starts out writable by it
    [user] = _dockerfile("USER")
    owned = " ".join(run for run in _dockerfile("RUN") if "chown" in run)
    chown = re.search(rf"chown\s+{re.escape(user)}\s+([^&]+)", owned)
    assert chown and str(mount) in chown[1].split(), f"the Dockerfile does not give {mount} to {user}: {owned}"
    assert re.search(rf"mkdir -p [^&]*{re.escape(str(mount))}(\s|$)", owned), owned
    assert "sqlite:////mlflow/" in " ".join(argv) and any(str(d) == "/mlflow" for d in mounts)  # the database too


@pytest.mark.slow
def test_memory_health_check_command_against_a_real_server(tmp_path: Path) -> None:
    # The compose health-check command of each memory service, run against `serve --transport http` on 127.0.0.1
    # with the token compose gives the container; the hashing embedder keeps the start to a few seconds.
    env = {**cli_env(), "HINDSIGHT_MCP_TOKEN": TOKEN, "HINDSIGHT_LAB_HOME": str(tmp_path / "home")}
    srv = ServeProcess(REPO / "experiments" / "configs" / "default.yaml", tmp_path / "store",
                       extra=["--set", "embedder.model=hashing-64"], env=env, token=TOKEN,
                       log=tmp_path / "server.log")
    srv.start(timeout=120)
    try:
        for name in MEMORY_SERVICES:
            argv = _healthcheck(name)
            assert argv[0] == "python", argv
            argv = [sys.executable] + [w.replace("127.0.0.1:8765", f"127.0.0.1:{srv.port}") for w in argv[1:]]
            ok = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
            assert ok.returncode == 0 and ok.stderr.strip() == "ok", (name, ok.returncode, ok.stderr)
            assert TOKEN not in ok.stdout + ok.stderr
            no_token = {k: v for k, v in env.items() if k != "HINDSIGHT_MCP_TOKEN"}
            refused = subprocess.run(argv, capture_output=True, text=True, env=no_token, timeout=60)
            assert refused.returncode == 1 and "Unauthorized" in refused.stderr, (name, refused.stderr)
    finally:
        srv.stop()
