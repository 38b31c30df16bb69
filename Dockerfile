# syntax=docker/dockerfile:1
# The operator image: `kopf run -m inference_operator.operator`, as a non-root numeric user.
# Build: docker build -t inference-operator:0.1.0 .   (make kind-up does it for kind)
# Without Docker or a registry: make images (hack/build-images.sh: buildah, base from Debian packages)

# The base image. For a reproducible build, pin it by digest:
#   docker build --build-arg PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:<digest> .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- build: wheels for the project and its pinned dependencies ------------------------------
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY requirements.lock pyproject.toml README.md ./
COPY inference_operator ./inference_operator
RUN python -m pip wheel --no-cache-dir --require-hashes --wheel-dir /wheels -r requirements.lock \
 && python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# -- runtime: no compilers, no pip cache, no source tree ------------------------------------
FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="inference-operator" \
      org.opencontainers.image.description="Kubernetes operator for GPU inference servers (InferenceService)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# Not "operator": Debian's base-passwd already has a group of that name (gid 37).
RUN groupadd --system --gid 10001 inference-operator \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin inference-operator
# The wheels are mounted, not copied: a COPY layer would keep them in the image even after `rm`.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --no-index --find-links /wheels /wheels/*.whl
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 10001:10001
EXPOSE 8080 9090
ENTRYPOINT ["kopf", "run", "-m", "inference_operator.operator"]
CMD ["--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz"]
