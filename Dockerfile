# syntax=docker/dockerfile:1
# The hindsight-lab memory server: `hindsight-lab serve` (MCP over streamable HTTP on port 8765, health at /health).
# compose.yaml runs it with Chroma and the MLflow UI; docs/operations.md says how to run it. Not built in the project's CI
# (no Docker engine there): tests/server/test_deploy.py checks what can be checked without one.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HINDSIGHT_LAB_HOME=/var/lib/hindsight-lab

WORKDIR /app

# 1. Dependencies, in a layer that changes only with pyproject.toml. torch's CPU build comes from PyTorch's own CPU
#    wheel index, at the version pyproject.toml pins (an unpinned torch from PyPI pulls a multi-GB CUDA build); then
#    the project is installed exactly as the README and .ci/run install it, `pip install -e '.[dev]'`, over an empty
#    package so that no source code is needed yet.
COPY pyproject.toml README.md ./
RUN torch_pin="$(python -c 'import tomllib; deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]; print(next(d for d in deps if d.startswith("torch==")))')" \
 && pip install --index-url https://download.pytorch.org/whl/cpu "$torch_pin" \
 && mkdir hindsight_lab && touch hindsight_lab/__init__.py \
 && pip install -e '.[dev]' \
 && pip check

# 2. The code (the editable install above points at this folder), the demo data and the exported configs.
COPY hindsight_lab ./hindsight_lab
COPY datasets ./datasets
COPY experiments ./experiments

# An unprivileged user; /data (embedded stores), /mlflow (the MLflow UI's database) and /mlflow-artifacts (its
# artifact store) belong to it, so named volumes mounted there start out writable (a new named volume takes the
# ownership of the folder it is mounted on).
RUN useradd --create-home --uid 10001 hindsight \
 && mkdir -p /data /mlflow /mlflow-artifacts "$HINDSIGHT_LAB_HOME" \
 && chown hindsight /data /mlflow /mlflow-artifacts "$HINDSIGHT_LAB_HOME"
USER hindsight

EXPOSE 8765
HEALTHCHECK --interval=15s --timeout=5s --start-period=90s --retries=5 \
  CMD ["python", "-m", "hindsight_lab.cli.healthcheck", "http://127.0.0.1:8765"]
# 0.0.0.0 inside the container: serve refuses a non-loopback bind unless $HINDSIGHT_MCP_TOKEN holds a token.
ENTRYPOINT ["hindsight-lab"]
CMD ["serve", "--config", "experiments/configs/default.yaml", "--store", "/data/memory", "--transport", "http", \
     "--host", "0.0.0.0", "--port", "8765"]
