# Airlock's image for those who build with Docker (or Podman, Buildah): docker build -t airlock .
# scripts/build-image.sh makes the same image without a registry or a container engine (mmdebstrap
# and umoci, reproducibly: docs/deploy.md, "The image"); keep the two equivalent. Both hold
# Debian 12, exactly the runtime packages scripts/image-packages.sh derives from the installed
# programs, Airlock's files as `cmake --install` lays them out under /usr/local, the user
# airlock (10001:10001, the default), /var/lib/airlock (0700, its), and the same entry point,
# command, ports and working directory. They differ in the base (Docker's debian:bookworm-slim,
# which also holds apt) and so in their digests. tests/image checks the runtime configuration
# below against the image build-image.sh makes. (No Docker engine runs where Airlock is tested:
# this file is not built there.)

FROM debian:bookworm AS build
# The toolchain and the libraries of scripts/install-deps.sh, without what only the tests need.
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake ninja-build make pkg-config git ca-certificates \
      libseccomp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev \
      libboost1.81-dev libidn2-dev libunistring-dev libyaml-cpp-dev libvalijson-dev rapidjson-dev \
      libsqlite3-dev libssl-dev prometheus-cpp-dev libpq-dev libvectorscan-dev libre2-dev \
      python3 python3-dev python3-jsonschema \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The Makefile's build flags; the programs and libraries only (no tests, no benchmarks).
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAIRLOCK_WERROR=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
      -DAIRLOCK_BUILD_TESTS=OFF \
    && cmake --build /build --target airlock airlock-serve airlock-tools airlock_warm airlock_ast_walker \
    && DESTDIR=/stage cmake --install /build \
    && scripts/image-packages.sh /stage >/stage-packages.txt

FROM debian:bookworm-slim
COPY --from=build /stage-packages.txt /usr/local/share/airlock/image-packages.txt
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      $(cat /usr/local/share/airlock/image-packages.txt) \
    && rm -rf /var/lib/apt/lists/* \
    && echo 'airlock:x:10001:10001:Airlock:/var/lib/airlock:/usr/sbin/nologin' >>/etc/passwd \
    && echo 'airlock:x:10001:' >>/etc/group \
    && install -d -m 0700 -o 10001 -g 10001 /var/lib/airlock
COPY --from=build /stage/usr /usr
USER 10001:10001
WORKDIR /var/lib/airlock
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EXPOSE 8750/tcp 3128/tcp
ENTRYPOINT ["/usr/local/bin/airlock"]
CMD ["serve", "--config", "/etc/airlock/airlock.yaml"]
