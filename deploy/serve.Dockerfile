# `context-integrity serve`, the judge as an OTLP pipeline stage, built from this checkout:
#   docker build -f deploy/serve.Dockerfile -t context-integrity-serve:0.1.0 .
# (docker-compose.yml builds it as the `judge` service). The arguments are serve's own: see
# `context-integrity serve --help` and docs/serve.md.
FROM python:3.12.8-slim

WORKDIR /opt/context-integrity
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir ".[serve]"

# Nothing here needs root.
USER 65534:65534
# OTLP/gRPC, OTLP/HTTP, and /metrics, /healthz, /readyz.
EXPOSE 4317 4318 9464
# SIGTERM reaches serve itself (exec form): it judges what is complete and forwards what it holds.
ENTRYPOINT ["context-integrity", "serve"]
