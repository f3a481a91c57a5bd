# vmstore: the developer interface. Everything builds under build/<flavor> with CMake+Ninja.
#
#   make build      install missing Debian packages, configure and build build/release
#   make test       release tests, the same in task mode (every test body inside a task),
#                   ASan+UBSan tests (build/asan), install check, Python; summary
#   make tsan       build build/tsan (ThreadSanitizer) and run the tests there
#   make crash-test the long crash runs: 1,000 SIGKILL cycles of a writer (make test runs
#                   50) and 64 power cuts per durability mode (make test: 16), release build
#   make run        build, then run `build/release/vmstore bench suite`: every engine on
#                   in-memory lookups, out-of-memory lookups and TPC-C (a few minutes),
#                   one summary table, CSV and plots under ./bench-results/<timestamp>/
#   make demo       build, then run `build/release/vmstore demo` (10x the pool, read back)
#   make install    cmake --install build/release --prefix $(PREFIX)   (PREFIX=/usr/local)
#   make clean      remove build/
#
# Variables: SUITE_ARGS (extra `bench suite` options for make run, e.g.
# SUITE_ARGS='--seconds=4'), PREFIX, CTEST_JOBS (default 2), CTEST_RETRIES (runs allowed a
# failing test, default 2; 1: no second run), CTEST_ARGS (extra ctest arguments, e.g.
# CTEST_ARGS='-R BTree'), VMSTORE_SKIP_DEPS=1 (skip the apt-get step), PYTHON (the
# interpreter that makes the binding's venv, default python3), PYTEST_ARGS (extra pytest
# arguments, e.g. PYTEST_ARGS='-k dbm').

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

BUILD_ROOT  := build
PREFIX      ?= /usr/local
CTEST_JOBS  ?= 2
CTEST_RETRIES ?= 2
CTEST_ARGS  ?=
SUITE_ARGS  ?=
TOP         := $(CURDIR)

RELEASE_DIR := $(BUILD_ROOT)/release
ASAN_DIR    := $(BUILD_ROOT)/asan
TSAN_DIR    := $(BUILD_ROOT)/tsan
PYTHON      ?= python3
PYTEST_ARGS ?=
PY_VENV     := $(BUILD_ROOT)/python-venv
PY_DIR      := $(BUILD_ROOT)/python

RELEASE_CMAKE_ARGS := -DVMSTORE_SANITIZE=
ASAN_CMAKE_ARGS    := -DVMSTORE_SANITIZE=address,undefined -DVMSTORE_BUILD_BENCH=OFF
TSAN_CMAKE_ARGS    := -DVMSTORE_SANITIZE=thread -DVMSTORE_BUILD_BENCH=OFF

ASAN_ENV := ASAN_OPTIONS=detect_leaks=1 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            VMSTORE_TEST_SCALE=small
# history_size=7: TSan keeps more access history, so the stack of an optimistic reader
# can be restored and matched by tsan.supp (with the default, 1 run in 3 of the counter
# tests reported a reader it could not name).
TSAN_ENV := TSAN_OPTIONS="suppressions=$(TOP)/tsan.supp halt_on_error=1 second_deadlock_stack=1 history_size=7" \
            VMSTORE_TEST_SCALE=small

# $(call configure_and_build,DIR,CMAKE_ARGS): configure DIR only if it has no build.ninja
# yet (after that Ninja re-runs CMake by itself when a CMakeLists.txt or a glob changes),
# then build it.
define configure_and_build
	@if [[ ! -f $(1)/build.ninja ]]; then \
	  echo "== configure $(1)"; \
	  cmake -S . -B $(1) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(2); \
	fi
	@echo "== build $(1)"
	@cmake --build $(1)
endef

# $(call run_ctest,DIR,ENV[,LOG]): run the CTest suite of DIR (fresh scratch directory),
# keep its output in DIR/LOG (default ctest.log) for the summary. A failed test runs once
# more (CTEST_RETRIES): a failure that does not repeat is still printed here with its
# output and named in the summary ("passed on a second run"), so it is seen, not hidden.
define run_ctest
	@echo "== test $(1) $(2)"
	@rm -rf $(1)/test-tmp && mkdir -p $(1)/test-tmp
	@cd $(1) && env $(2) ctest --output-on-failure -j$(CTEST_JOBS) --repeat until-pass:$(CTEST_RETRIES) $(CTEST_ARGS) 2>&1 | tee $(or $(3),ctest.log)
endef

.PHONY: all deps build build-release build-asan build-tsan test test-release test-tasks test-asan \
        check-install python-test tsan crash-test test-policies numa-test run demo install clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	$(call configure_and_build,$(RELEASE_DIR),$(RELEASE_CMAKE_ARGS))

build-release: build

build-asan: deps
	$(call configure_and_build,$(ASAN_DIR),$(ASAN_CMAKE_ARGS))

build-tsan: deps
	$(call configure_and_build,$(TSAN_DIR),$(TSAN_CMAKE_ARGS))

test-release: build
	$(call run_ctest,$(RELEASE_DIR),)

# The release suite again with every test body running inside a task (tests/test_main.cpp):
# the task paths of every wait and miss.
# Task mode under the built-in clock (the release run has the default policy, s3fifo).
test-tasks: build
	$(call run_ctest,$(RELEASE_DIR),VMSTORE_TEST_TASK_MODE=1 VMSTORE_TEST_POLICY=clock,ctest-tasks.log)

test-asan: build-asan
	$(call run_ctest,$(ASAN_DIR),$(ASAN_ENV))

check-install: build
	@echo "== check install of $(RELEASE_DIR)"
	@bash scripts/check-install.sh $(RELEASE_DIR)

# The Python binding: a venv of its own (build/python-venv), `pip install ./python pytest`
# (pip builds the extension and the library from this tree, at most 2 compile jobs), then
# its pytest suite, run from outside python/ so that the installed package is the one
# tested. The pytest output is kept in build/python/pytest.log for the summary.
python-test: deps
	@echo "== python binding"
	@rm -f $(PY_DIR)/pytest.log && mkdir -p $(PY_DIR)
	@if [[ ! -x $(PY_VENV)/bin/python ]]; then $(PYTHON) -m venv $(PY_VENV); fi
	@CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY_VENV)/bin/python -m pip install --quiet \
	  --disable-pip-version-check ./python pytest
	@cd $(PY_DIR) && $(TOP)/$(PY_VENV)/bin/python -m pytest -o cache_dir=$(TOP)/$(PY_DIR)/pytest-cache \
	  $(PYTEST_ARGS) $(TOP)/python/tests 2>&1 | tee pytest.log

# Runs every stage even when an earlier one fails, then prints one line per stage and a
# closing "N passed, N failed" line over every test suite; fails if any stage failed.
test: deps
	@rm -f $(RELEASE_DIR)/ctest.log $(RELEASE_DIR)/ctest-tasks.log $(ASAN_DIR)/ctest.log $(PY_DIR)/pytest.log
	@start=$$(date +%s); release=ok; tasks=ok; asan=ok; install=ok; python=ok; \
	$(MAKE) --no-print-directory test-release VMSTORE_SKIP_DEPS=1 || release=FAILED; \
	$(MAKE) --no-print-directory test-tasks VMSTORE_SKIP_DEPS=1 || tasks=FAILED; \
	$(MAKE) --no-print-directory test-asan VMSTORE_SKIP_DEPS=1 || asan=FAILED; \
	$(MAKE) --no-print-directory check-install VMSTORE_SKIP_DEPS=1 || install=FAILED; \
	$(MAKE) --no-print-directory python-test VMSTORE_SKIP_DEPS=1 || python=FAILED; \
	bash scripts/test-summary.sh $$(( $$(date +%s) - start )) \
	  "release:$$release:$(RELEASE_DIR)/ctest.log" \
	  "task-mode:$$tasks:$(RELEASE_DIR)/ctest-tasks.log" \
	  "asan:$$asan:$(ASAN_DIR)/ctest.log" \
	  "install-check:$$install:" \
	  "python:$$python:$(PY_DIR)/pytest.log"

tsan: build-tsan
	$(call run_ctest,$(TSAN_DIR),$(TSAN_ENV))

# Memory tiers on two NUMA nodes: boots a qemu guest (scripts/numa-guest.sh; software
# emulation, a few minutes) and runs there the NUMA and tier tests, the model test with
# tiers on both nodes, and the migration benchmark (NUMA_BENCH=0 skips it). Test files go
# to the guest's tmpfs; the benchmark's output to build/numa-bench.
NUMA_TESTS ?= Numa.*:Tiering.*:Tiers.*:TieredSeeds/*
NUMA_BENCH ?= 1
numa-test: build
	@echo "== numa-test: a guest with 2 NUMA nodes"
	@bash scripts/numa-guest.sh --nodes=2 --mem-per-node=2G --cpus=2 --timeout=3000 -- '\
	  set -e; mkdir -p /tmp/vt; export VMSTORE_TEST_TMPDIR=/tmp/vt VMSTORE_TEST_SCALE=small; \
	  echo "guest: $$(ls -d /sys/devices/system/node/node* | wc -l) NUMA nodes, kernel $$(uname -r)"; \
	  $(TOP)/$(RELEASE_DIR)/vmstore_tests --gtest_brief=1 --gtest_filter="$(NUMA_TESTS)"; \
	  VMSTORE_MODEL_CONFIG="durability=async,tiers=0:1M+1:1M,migrate_batch=16" \
	    $(TOP)/$(RELEASE_DIR)/vmstore_tests --gtest_brief=1 --gtest_filter="Seeds/ModelTest.*"; \
	  if [ "$(NUMA_BENCH)" = 1 ]; then mkdir -p $(TOP)/build/numa-bench; \
	    $(TOP)/$(RELEASE_DIR)/vmstore bench migrate --csv=$(TOP)/build/numa-bench/migrate.csv; fi'
	@echo "numa-test: passed"

CRASH_CYCLES ?= 1000
POWER_CUTS   ?= 64
crash-test: build
	@echo "== crash test: $(CRASH_CYCLES) kill cycles, $(POWER_CUTS) power cuts per mode"
	@mkdir -p $(RELEASE_DIR)/test-tmp
	@cd $(RELEASE_DIR)/test-tmp && VMSTORE_CRASH_CYCLES=$(CRASH_CYCLES) VMSTORE_POWER_CUTS=$(POWER_CUTS) \
	  ../vmstore_tests --gtest_filter='Crash.*:PowerLoss.*'

# Every replacement policy through the buffer manager's, the model's and the
# out-of-memory tests (VMSTORE_TEST_POLICY, tests/test_main.cpp); `make test` runs each
# policy end to end once (tests/e2e/policies_test.cpp). POLICIES=a,b limits the list.
POLICY_TESTS ?= BufferManager.*:VariableSizePages.*:Guards.*:Seeds/ModelTest.*:OutOfMemory.*:LargeValues.*:Failures.*
test-policies: build
	@mkdir -p $(RELEASE_DIR)/test-tmp
	@cd $(RELEASE_DIR)/test-tmp && failed=""; \
	for p in $$(echo "$${POLICIES:-$$(../vmstore sim --list-policies)}" | tr ',' ' '); do \
	  echo "== policy $$p"; \
	  VMSTORE_TEST_POLICY=$$p ../vmstore_tests --gtest_brief=1 --gtest_filter='$(POLICY_TESTS)' || failed="$$failed $$p"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-policies: FAILED under:$$failed"; exit 1; fi; echo "test-policies: all passed"

# $(call require_cli): fail with a message when the CLI was not built.
define require_cli
	@if [[ ! -x $(RELEASE_DIR)/vmstore ]]; then \
	  echo "make: $(RELEASE_DIR)/vmstore was not built (no tools/*.cpp yet?)" >&2; exit 1; \
	fi
endef

run: build
	$(call require_cli)
	$(RELEASE_DIR)/vmstore bench suite $(SUITE_ARGS)

demo: build
	$(call require_cli)
	$(RELEASE_DIR)/vmstore demo

# Neither libvmstore.so.0 nor the programs linked against it carry an rpath: as root with
# PREFIX /usr or /usr/local, ldconfig then refreshes the loader's cache so that they find
# the library; for another PREFIX, see README ("Build it against an installed vmstore").
install: build
	cmake --install $(RELEASE_DIR) --prefix "$(PREFIX)"
	@if [[ $${EUID} -eq 0 && ( "$(PREFIX)" == /usr || "$(PREFIX)" == /usr/local ) ]]; then \
	  if command -v ldconfig >/dev/null 2>&1; then echo "== ldconfig"; ldconfig; \
	  else echo "make install: ldconfig is not in PATH: run it (as root) so that programs find libvmstore.so.0" >&2; fi; \
	fi

clean:
	rm -rf $(BUILD_ROOT)
