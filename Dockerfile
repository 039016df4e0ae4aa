# One image for the team deployment: the project with its CLI, the MLflow and Prefect servers with
# their logins (the `server` extra: MLflow's auth app, the Postgres drivers), and CUDA-enabled torch
# (the PyPI wheel) for the GPU worker.
#   docker compose build        (see docs/deployment.md)
FROM python:3.11-slim

ARG TORCH_VERSION=2.13.0
# e.g. https://download.pytorch.org/whl/cpu for a smaller CPU-only image
ARG TORCH_INDEX_URL=https://pypi.org/simple

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    BOTTLENECKS_HOME=/state \
    BOTTLENECKS_DATA=/data \
    PREFECT_HOME=/state/prefect \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    DO_NOT_TRACK=1 \
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false

RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
RUN pip install --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"
# dependencies first, so editing the code does not reinstall them
COPY pyproject.toml README.md ./
RUN mkdir -p flows components \
    && touch flows/__init__.py components/__init__.py \
    && pip install ".[server]" "asyncpg>=0.29" \
    && pip uninstall -y bottlenecks \
    && rm -rf flows components build *.egg-info
COPY flows ./flows
COPY components ./components
COPY pipelines ./pipelines
RUN pip install --no-deps -e . \
    && useradd --create-home --uid 1000 bottlenecks \
    && mkdir -p /state /data /mlartifacts /tls \
    && chown bottlenecks /state /mlartifacts /tls

USER bottlenecks
ENTRYPOINT ["tini", "--"]
CMD ["bottlenecks", "--help"]
