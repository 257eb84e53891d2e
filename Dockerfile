# syntax=docker/dockerfile:1
# One image for every component of a region; the command picks the component:
#   python -m regions.intake | regions.processor | regions.projector | regions.audit | regions.lifecycle
#     | gateway | replicator
#   python -m regions.cli bootstrap   (topics and CQL migrations; the chart's bootstrap Job)
# Build: docker build -t leaderboard-platform:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: a virtualenv with exactly the locked runtime dependencies (hashes checked)
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
RUN python -m venv /opt/venv
COPY requirements-runtime.lock /tmp/requirements-runtime.lock
RUN /opt/venv/bin/pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements-runtime.lock
COPY schema /app/schema
COPY regions /app/regions
COPY gateway /app/gateway
COPY replicator /app/replicator
# The code runs from /app (like the .pth of a development venv); compiled now, as the root
# filesystem is read-only at run time.
RUN echo /app > "$(/opt/venv/bin/python -c 'import site; print(site.getsitepackages()[0])')/leaderboard-platform.pth" \
 && /opt/venv/bin/python -m compileall -q /app /opt/venv/lib

# ---- graphiql: the browser files of the GraphiQL page (served only when gateway.graphiql is on)
FROM node:20-bookworm-slim AS graphiql
WORKDIR /graphiql
COPY gateway/graphiql/package.json gateway/graphiql/package-lock.json gateway/graphiql/bundle.sh ./
RUN npm ci --no-audit --no-fund --loglevel=error && ./bundle.sh

# ---- run: no compilers, no pip cache, a non-root numeric user (runAsNonRoot can check it)
FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 lb \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin lb
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
COPY --from=graphiql /graphiql/assets /app/gateway/graphiql/assets
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
USER 10001:10001
EXPOSE 8080 8081 8082 8083 8084 8085
CMD ["python", "-m", "gateway"]
