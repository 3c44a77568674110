# The two commands a newcomer needs: `make demo` and `make test`.
BUILD_DIR ?= build
SANITIZE_DIR ?= build-sanitize
FUZZ_SECONDS ?= 30
JOBS ?= $(shell nproc)
# The benchmarks are not built here: bench/run.sh builds them in Release in build-bench/, and
# nothing in `make test` or `make demo` runs them (15 programs from 20 files at -O2, compiled and
# linked for nothing on every fresh machine).
# -g1 (line tables and function names, no variables): backtraces and profiles keep their
# lines, and the build and its links take far less time than with -g. Full debug info:
# make CMAKE_FLAGS="-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo"
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAIRLOCK_WERROR=ON -DAIRLOCK_BUILD_BENCH=OFF \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"

# ccache where it is installed (scripts/install-deps.sh installs it): a second clone, or a tree
# rebuilt after a branch switch, compiles only what changed. Paths are hashed relative to the
# clone, so clones in other folders share the cache. Decided in the recipe, after `deps` ran:
# decided when make reads this file, a fresh machine's first build went without ccache (deps
# installs it later) and the next command's configure added it, which rebuilt the whole tree.
LAUNCHER = $$(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all deps build build-sanitize demo test image clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) $(LAUNCHER) >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Clang, with AddressSanitizer and UndefinedBehaviorSanitizer: the libraries, the unit tests
# and the libFuzzer targets (the HTTP request parser and the config loader). -O1 and line
# tables only: what the sanitizers' reports need, and a third less build time than -O2 -g.
# The tests' own code and the HTTP server's connections are -O0 there (tests/CMakeLists.txt,
# src/server/http/CMakeLists.txt): code those tests only drive, or never run, compiles faster so.
SANITIZE_FLAGS ?= -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
	-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG"
build-sanitize: deps
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(SANITIZE_DIR) $(CMAKE_FLAGS) $(LAUNCHER) $(SANITIZE_FLAGS) -DAIRLOCK_SANITIZE=ON \
		-DAIRLOCK_UNIT_TESTS_ONLY=ON -DAIRLOCK_FUZZ=ON -DAIRLOCK_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD_DIR)/src/cli/airlock

# Unit tests under the sanitizers and the fuzz targets for a short while, then every test
# (unit, integration, unprivileged) in the normal build. Exit 0 only when both ctest runs pass.
# Then where the time went: each tree's build and the slowest tests (the CI budget's breakdown).
test: build build-sanitize
	@echo "== unit tests under ASan+UBSan, and the fuzz targets ($(FUZZ_SECONDS)s each) =="
	@cd $(SANITIZE_DIR) && ctest --output-on-failure -j $(JOBS)
	@echo "== all tests =="
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS); status=$$?; \
		cd $(CURDIR) && scripts/build-and-test-times.py $(BUILD_DIR) $(SANITIZE_DIR); exit $$status

# The OCI image (Debian's packages and this build, no registry): build/image/oci, its digest
# printed (scripts/build-image.sh; docs/deploy.md, "The image"). Root: mmdebstrap, umoci.
image: build
	@scripts/build-image.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR)
