# vllm-configurator: the CLI (`check`, `review`, `plan`, ...) and the admission webhook in one image.
#   docker build -t vllm-configurator .            (or: buildah bud -t vllm-configurator .)
#   helm template x charts/vllm -f values.yaml | docker run --rm -i vllm-configurator check -
#   docker run --rm -v "$PWD:/work" vllm-configurator check k8s/
#   docker run --rm -p 8443:8443 -v /tls:/tls:ro vllm-configurator webhook --tls-cert-file /tls/tls.crt --tls-private-key-file /tls/tls.key
#
# BASE is any image with python3 (3.10 or later) and its venv module. The default is Python's slim
# image; CI builds FROM a root file system made only from Debian's packages (python3, python3-venv,
# ca-certificates; .ci/build-image), because its machines reach package registries only.
ARG BASE=python:3.12-slim
FROM ${BASE}
# extra pip options, e.g. "--no-index --find-links /wheels" with wheels mounted at build time (CI)
ARG PIP_ARGS=""
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY configurator ./configurator
COPY profiles ./profiles
COPY schemas ./schemas
# a virtual environment: Debian's python3 refuses `pip install` into the system (PEP 668)
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check $PIP_ARGS ".[webhook,cluster]" \
 && rm -rf /src
WORKDIR /work
# any non-root UID; the image writes nothing outside /tmp
USER 65532:65532
ENTRYPOINT ["vllm-configurator"]
CMD ["--help"]
