# The two commands a newcomer needs: `make demo` and `make test`.
BUILD_DIR ?= build
SANITIZE_DIR ?= build-sanitize
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 30
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAIRLOCK_WERROR=ON

.PHONY: all deps build build-sanitize build-fuzz demo test clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Libraries and unit tests under AddressSanitizer and UndefinedBehaviorSanitizer.
build-sanitize: deps
	@cmake -S . -B $(SANITIZE_DIR) $(CMAKE_FLAGS) -DAIRLOCK_SANITIZE=ON -DAIRLOCK_UNIT_TESTS_ONLY=ON >/dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)

# libFuzzer targets (Clang, with ASan and UBSan): the HTTP request parser and the config loader.
build-fuzz: deps
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_DIR) $(CMAKE_FLAGS) -DAIRLOCK_FUZZ=ON -DAIRLOCK_SANITIZE=ON \
		-DAIRLOCK_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD_DIR)/src/cli/airlock

# Unit tests under the sanitizers, the fuzz targets for a short while, then every test (unit,
# integration, unprivileged) in the normal build. Exit 0 only when every ctest run passes.
test: build build-sanitize build-fuzz
	@echo "== unit tests (ASan+UBSan) =="
	@cd $(SANITIZE_DIR) && ctest --output-on-failure -L unit -j $(JOBS)
	@echo "== fuzz targets ($(FUZZ_SECONDS)s each) =="
	@cd $(FUZZ_DIR) && ctest --output-on-failure
	@echo "== all tests =="
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(FUZZ_DIR)
