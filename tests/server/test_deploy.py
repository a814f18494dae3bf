"""Deployment files, checked as far as is honest without a Docker engine (none runs here, so nothing is built or
started): the compose file parses and wires health checks and start conditions; the Dockerfile installs the same
dependency set as the README and ``.ci/run`` — the project from pyproject.toml with its ``dev`` extra — with torch's
CPU build from PyTorch's own wheel index at the pinned version; the dependency layer comes before the code."""

from __future__ import annotations

import re
import tomllib

import yaml

from support import REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((REPO / "compose.yaml").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _instructions() -> list[tuple[str, str]]:
    """``(KEYWORD, arguments)`` of each Dockerfile instruction, continuation lines joined, comments dropped."""
    lines = [ln for ln in DOCKERFILE.splitlines() if not ln.lstrip().startswith("#")]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(m[1].upper(), m[2]) for m in re.finditer(r"^\s*([A-Za-z]+)\s+(.*)$", text, re.M)]


def test_compose_services_have_health_checks_and_start_conditions() -> None:
    services = COMPOSE["services"]
    assert set(services) == {"chroma", "memory", "mlflow", "postgres", "memory-postgres"}
    for name, svc in services.items():
        conditions = [d.get("condition") for d in (svc.get("depends_on") or {}).values()]
        assert svc.get("healthcheck") or conditions, f"{name}: no health check and no dependency condition"
        if "healthcheck" in svc:
            assert svc["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
    memory = services["memory"]
    assert memory["depends_on"] == {"chroma": {"condition": "service_healthy"}}
    assert memory["healthcheck"]["test"][1:4] == ["python", "-m", "hindsight_lab.cli.healthcheck"]
    assert "/api/v2/heartbeat" in " ".join(services["chroma"]["healthcheck"]["test"])
    assert "/health" in " ".join(services["mlflow"]["healthcheck"]["test"])


def test_compose_serves_http_on_the_chroma_service_with_a_token_and_volumes() -> None:
    services = COMPOSE["services"]
    cmd = services["memory"]["command"]
    assert cmd[0] == "serve" and cmd[cmd.index("--transport") + 1] == "http"
    assert cmd[cmd.index("--store") + 1] == "http://chroma:8000"
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"  # inside the container; published on 127.0.0.1 only
    assert all(p.startswith("127.0.0.1:") for s in services.values() for p in s.get("ports", []))
    # a non-loopback bind needs the token: compose refuses to start without the variable
    assert services["memory"]["environment"]["HINDSIGHT_MCP_TOKEN"].startswith("${HINDSIGHT_MCP_TOKEN:?")
    assert set(COMPOSE["volumes"]) == {"chroma-data", "mlflow-data", "mlflow-artifacts", "postgres-data"}
    assert "chroma-data:/data" in services["chroma"]["volumes"]
    assert "mlflow-data:/mlflow" in services["mlflow"]["volumes"]
    assert services["chroma"]["image"] == "chromadb/chroma:" + _pin("chromadb")


def test_compose_postgres_profile_waits_for_a_healthy_database_and_keeps_secrets_in_the_environment() -> None:
    services = COMPOSE["services"]
    db, memory = services["postgres"], services["memory-postgres"]
    assert db["profiles"] == memory["profiles"] == ["postgres"]  # opt-in: `docker compose up` is unchanged
    assert db["image"] == "pgvector/pgvector:pg16"  # PostgreSQL 16 with pgvector
    assert db["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    assert ["-U", "hindsight", "-d", "hindsight"] == db["healthcheck"]["test"][2:6]
    assert "postgres-data:/var/lib/postgresql/data" in db["volumes"]
    assert "ports" not in db  # reached by the memory server on the compose network only
    assert memory["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert memory["healthcheck"]["test"][1:4] == ["python", "-m", "hindsight_lab.cli.healthcheck"]  # where it lives
    cmd = memory["command"]
    store = cmd[cmd.index("--store") + 1]
    assert store == "postgresql://hindsight@postgres:5432/hindsight"  # no password in the URL (or in `ps`)
    assert cmd[cmd.index("--transport") + 1] == "http" and memory["ports"] == ["127.0.0.1:8766:8765"]
    # credentials only from the environment: both sides read ${DB_PASSWORD}, and compose refuses to start without it
    assert db["environment"]["POSTGRES_PASSWORD"].startswith("${DB_PASSWORD:?")
    assert memory["environment"]["PGPASSWORD"].startswith("${DB_PASSWORD:?")
    assert memory["environment"]["HINDSIGHT_MCP_TOKEN"].startswith("${HINDSIGHT_MCP_TOKEN:?")


def test_compose_holds_no_secret_literal() -> None:
    text = (REPO / "compose.yaml").read_text()
    for name, svc in COMPOSE["services"].items():
        for key, value in (svc.get("environment") or {}).items():
            if re.search(r"PASSWORD|TOKEN|SECRET|KEY", key):
                assert str(value).startswith("${"), f"{name}: {key} is a literal, not from the environment"
    assert not re.search(r"postgres(ql)?://[^@\s/]*:[^@\s/]*@", text), "a password inside a URL"


def _pin(name: str) -> str:
    dep = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith(name + "=="))
    return dep.split("==", 1)[1]


def test_dockerfile_installs_the_dependency_set_of_the_readme_and_ci() -> None:
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert "pip install -e '.[dev]'" in readme and "pip install -q -e '.[dev]'" in ci  # what the others install
    runs = " && ".join(args for kw, args in _instructions() if kw == "RUN")
    assert "pip install -e '.[dev]'" in runs  # the same: the project, its pins, the dev extra
    # torch: the CPU build, from PyTorch's CPU index, at the version pyproject.toml pins (read from it)
    assert f"--index-url {CPU_INDEX}" in runs and '"$torch_pin"' in runs
    assert 'd.startswith("torch==")' in runs and "pyproject.toml" in runs
    assert _pin("torch")  # pyproject pins torch exactly
    # nothing pinned in the Dockerfile itself: every version comes from pyproject.toml
    assert not re.search(r"[A-Za-z0-9_.-]+==[0-9]", runs.replace('"torch=="', "")), runs


def test_dockerfile_layers_dependencies_before_code_and_serves_http() -> None:
    steps = _instructions()
    assert steps[0] == ("FROM", "python:3.11-slim")
    copies = [args for kw, args in steps if kw == "COPY"]
    order = [kw + " " + args for kw, args in steps]
    deps_copy = order.index("COPY pyproject.toml README.md ./")
    install = next(i for i, s in enumerate(order) if s.startswith("RUN") and ".[dev]" in s)
    code_copy = order.index("COPY hindsight_lab ./hindsight_lab")
    assert deps_copy < install < code_copy, order
    assert copies[0] == "pyproject.toml README.md ./"
    assert any(kw == "USER" and args != "root" for kw, args in steps)
    entry = next(args for kw, args in steps if kw == "ENTRYPOINT")
    cmd = next(args for kw, args in steps if kw == "CMD" and "serve" in args)
    assert '"hindsight-lab"' in entry and '"--transport", "http"' in cmd and '"--host", "0.0.0.0"' in cmd
    health = next(args for kw, args in steps if kw == "HEALTHCHECK")
    assert "hindsight_lab.cli.healthcheck" in health
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*") + 1:][:5] == ["!pyproject.toml", "!README.md", "!hindsight_lab/", "!datasets/",
                                                   "!experiments/"]
