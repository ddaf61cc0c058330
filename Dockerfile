# vllm-configurator: the CLI, the admission webhook and audit in one small image.
#   docker build -t vllm-configurator .
#   docker run --rm -v "$PWD:/work" -w /work vllm-configurator check k8s/
FROM python:3.12-slim
WORKDIR /src
COPY pyproject.toml README.md ./
COPY configurator ./configurator
COPY profiles ./profiles
COPY schemas ./schemas
RUN pip install --no-cache-dir ".[webhook,cluster]" && rm -rf /src
USER 65532:65532
ENTRYPOINT ["vllm-configurator"]
CMD ["--help"]
