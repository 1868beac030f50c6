# aether's container image. `scripts/image` builds it, tagged aether:VERSION (the workspace
# version in Cargo.toml: the default --image of `aether fleet manifests`) and aether:latest:
#
#   scripts/image                       with docker or podman
#   scripts/image --oci DIR --run       without an engine: this file's runtime stage carried out
#                                       by mmdebstrap, chroot and umoci into an OCI layout, then run
#                                       with runc (scripts/check does it; keep the runtime stage to
#                                       FROM debian, RUN, COPY --from=build /opt/aether, ENV, USER,
#                                       WORKDIR and CMD in the exec form, which it reads)
#   docker run --rm -e AWS_REGION -e AWS_ACCESS_KEY_ID -e AWS_SECRET_ACCESS_KEY -e AWS_SESSION_TOKEN \
#     aether:0.1.0 aether qualify --event_log s3://my-bucket/spark-logs/
#
# It runs as the user aether, uid 1000 (home /home/aether, where aether keeps its history); to keep the
# reports and the history on the host, run as yourself with both in a folder you own:
#   mkdir -p work && docker run --rm -u "$(id -u):$(id -g)" -v "$PWD/work:/work" \
#     -e AETHER_HOME=/work/home -e AWS_REGION … aether:0.1.0 \
#     aether qualify --event_log s3://my-bucket/spark-logs/ --output /work/out
#
# The runtime holds the release binary (the QualX models are compiled in), libxgboost.so and the
# OpenMP runtime from the PyPI wheel xgboost-cpu, laid out by `scripts/image --files` in
# /opt/aether; no JRE (only the local platform's spark-submit would need one).

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
# scripts/setup fetches the xgboost-cpu wheel with pip and apt-installs libclang for bindgen
# (Debian's current bookworm packages: a pinned version would vanish with the next point release)
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-pip python3-venv
WORKDIR /src
COPY . .
RUN scripts/setup
RUN cargo build --release --locked -p aether \
    && scripts/image --files /opt/aether --binary target/release/aether

FROM debian:bookworm-slim
# the system's CA roots for S3 and the AWS APIs (TLS)
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/aether /opt/aether
ENV PATH=/opt/aether/bin:$PATH
# where `aether fleet submit` finds the libraries it ships with the binary to its Spark tasks
ENV XGBOOST_LIB_DIR=/opt/aether/lib/xgboost/lib
RUN useradd --create-home --uid 1000 --user-group aether
# numeric, so that Kubernetes' runAsNonRoot can tell it is not root
USER 1000:1000
WORKDIR /home/aether
# no ENTRYPOINT: Kubernetes and AWS Batch manifests run `aether …` or `sh -c 'exec aether …'`
CMD ["aether", "--help"]
