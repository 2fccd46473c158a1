# txops — the two commands a new machine needs:
#   make bench   build, then run every operator on real-model shapes (txops bench): speed as a ratio to
#                same-run machine limits, error against the fp64 reference
#   make test    build, then run the whole test suite: C++ (gtest via ctest), the same under
#                AddressSanitizer + UndefinedBehaviorSanitizer, the Python package's pytest suite, and the
#                threaded tests under ThreadSanitizer (test-tsan)
# Both install the Debian packages they need when missing, and can be run any number of times.
BUILD ?= build
SAN_BUILD ?= build-san
TSAN_BUILD ?= build-tsan
JOBS ?= $(shell nproc)
PYTHON := /usr/bin/python3
APT_PACKAGES := cmake g++ make pkg-config libhwy-dev libgtest-dev libbenchmark-dev libomp-dev \
                python3-dev python3-numpy python3-pytest python3-torch pybind11-dev \
                python3-setuptools python3-wheel python3-pip python3-venv
# The Python package's test environments (python/README.md): .venv/ with the pinned torch 2.13 (CPU) / NumPy 2
# stack of python/requirements-test.txt, build requirements included (the package installs without build
# isolation), and .venv-numpy1/ with NumPy 1.x and no torch. Made once from VENV_BASE (Python 3.11: the pinned
# torch wheel's), remade when their requirements file changes. build-py/ is the package's persistent CMake build
# dir (incremental rebuilds); the wheel built there is installed into both. pip -qq: errors only (the machine's
# pip config warns about every missing find-links folder).
VENV_BASE ?= python3
VENV := .venv
VENV_NP1 := .venv-numpy1
PY_BUILD := build-py

.PHONY: all deps bench-deps build build-san build-tsan test test-cpp test-san test-tsan test-python venv bench python install clean

all: build

deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTXOPS_BUILD_PYTHON=ON -DPython3_EXECUTABLE=$(PYTHON)
	cmake --build $(BUILD) -j$(JOBS)

# The sanitizer builds (and the fuzzers') compile at -O1 -g1: the Highway kernel files, instantiated per ISA and
# dtype, took ~4x longer at RelWithDebInfo's -O2 -g (kernels_grad.cpp with ASan: 293 s against 1868 s, same
# loaded machine), and line tables are all a sanitizer report needs.
# On a CPU without AVX-512 they also leave out the AVX3 kernels (TXOPS_NO_AVX3), which could not run there (their
# tests skip by name either way): a third less to compile in the longest part of `make test`.
HOST_AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes)
SAN_FLAGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DTXOPS_NO_AVX3=$(if $(HOST_AVX512),OFF,ON)

build-san: deps
	cmake -S . -B $(SAN_BUILD) $(SAN_FLAGS) -DTXOPS_SANITIZE=address,undefined -DTXOPS_BUILD_TOOLS=OFF
	cmake --build $(SAN_BUILD) -j$(JOBS)

test-cpp: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-san: build-san
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(SAN_BUILD) --output-on-failure -j$(JOBS)

# ThreadSanitizer. libgomp is not TSan-instrumented: TSan does not see its barriers, so every parallel_for reads as
# a race (so does libomp without Archer: 23 false reports in core_parallel_test, 545 in concurrency_test; a bare
# omp-parallel loop gets them with libgomp too). A suppressions file would have to match
# libgomp frames, which are on the stack of every access made inside a parallel region: it would hide the real
# races between pool threads too. TXOPS_NUM_THREADS=1 would leave the pool unchecked. So the TSan build links LLVM's
# libomp instead (same GOMP_* ABI gcc's code calls; from libomp-dev) with its TSan tool Archer (OMP_TOOL_LIBRARIES),
# which tells TSan about OpenMP's fork, barriers and join: no suppressions, the pool runs (concurrency_test: 8
# callers x 3 pool threads), and races both between callers and between the pool threads of one call are reported
# (a planted counter in an aclnn wrapper was, both ways). Only the threaded test binaries are built.
TSAN_TESTS := concurrency_test runtime_test core_parallel_test gdr_aclnn_test rope_aclnn_test
LIBOMP_DIR = $(patsubst %/libarcher.so,%,$(lastword $(sort $(shell ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null))))
empty :=
space := $(empty) $(empty)

build-tsan: deps
	@test -n "$(LIBOMP_DIR)" || { echo "build-tsan: no /usr/lib/llvm-*/lib/libarcher.so (libomp-dev)"; exit 1; }
	cmake -S . -B $(TSAN_BUILD) $(SAN_FLAGS) -DTXOPS_SANITIZE=thread -DTXOPS_BUILD_TOOLS=OFF \
	  -DOpenMP_CXX_FLAGS=-fopenmp -DOpenMP_CXX_LIB_NAMES=omp -DOpenMP_omp_LIBRARY=$(LIBOMP_DIR)/libomp.so
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target $(TSAN_TESTS)

test-tsan: build-tsan
	OMP_TOOL_LIBRARIES=$(LIBOMP_DIR)/libarcher.so OMP_WAIT_POLICY=passive \
	  TSAN_OPTIONS="ignore_noninstrumented_modules=1 second_deadlock_stack=1" \
	  ctest --test-dir $(TSAN_BUILD) --output-on-failure -j$(JOBS) -R '^($(subst $(space),|,$(strip $(TSAN_TESTS))))$$'

$(VENV)/requirements.txt: python/requirements-test.txt | deps
	test -x $(VENV)/bin/python || $(VENV_BASE) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -qq -r $<
	cp $< $@

$(VENV_NP1)/requirements.txt: python/requirements-numpy1.txt | deps
	test -x $(VENV_NP1)/bin/python || $(VENV_BASE) -m venv $(VENV_NP1)
	$(VENV_NP1)/bin/python -m pip install -qq -r $<
	cp $< $@

venv: $(VENV)/requirements.txt $(VENV_NP1)/requirements.txt

# The installed package is what is tested (TXOPS_TEST_INSTALLED: not the source tree's python/txops).
test-python: python $(VENV_NP1)/requirements.txt
	TXOPS_TEST_INSTALLED=1 $(VENV)/bin/python -m pytest -q python/tests
	$(VENV_NP1)/bin/python -m pip install -qq --no-deps --force-reinstall $(PY_BUILD)/dist/txops-*.whl
	TXOPS_TEST_INSTALLED=1 $(VENV_NP1)/bin/python -m pytest -q python/tests/test_numpy.py python/tests/test_docs.py

# make test includes a short fuzz pass: every target for TEST_FUZZ_SECONDS on its seed corpus (the long run is
# `make fuzz FUZZ_SECONDS=N`, fuzz/README.md).
TEST_FUZZ_SECONDS ?= 15
test: test-san test-python test-cpp test-tsan test-fuzz

# The PyTorch peers (bench/README.md) run in the project venv (torch 2.13 CPU; + transformers, for the eager
# gated-delta-rule peer: bench/requirements-bench.txt), eager and under torch.compile, on the records txops bench
# wrote; py_bench.py runs the installed package against PyTorch and the same C++ calls. They run even when a
# txops case failed; the exit status is txops bench's. BENCH_PEERS=eager skips torch.compile; the compile peer
# runs the bf16 cases by default (every suite case, in the dtype the models use: compiling all three dtypes
# adds ~4 min cold on 2 cores), BENCH_COMPILE_DTYPES=bf16,fp16,fp32 for all.
BENCH_PEERS ?= eager,compile
BENCH_COMPILE_DTYPES ?= bf16
$(VENV)/requirements-bench.txt: bench/requirements-bench.txt $(VENV)/requirements.txt
	$(VENV)/bin/python -m pip install -qq -r $< -c python/requirements-test.txt
	cp $< $@

# The plot of `make bench` (bench/plot_bench.py) runs on Debian's Python with its matplotlib: no wheel of it here.
bench-deps:
	@dpkg-query -W -f='$${Status}' python3-matplotlib 2>/dev/null | grep -q "install ok installed" || { \
	  echo "make bench: installing python3-matplotlib (the plot)"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib; }

bench: build python $(VENV)/requirements-bench.txt bench-deps
	@status=0; $(BUILD)/txops bench --json $(BUILD)/bench.json || status=$$?; \
	/usr/bin/python3 bench/plot_bench.py $(BUILD)/bench.json || status=1; \
	$(VENV)/bin/python bench/torch_rope.py --compare $(BUILD)/bench.json --peers $(BENCH_PEERS) \
	  --compile-dtypes $(BENCH_COMPILE_DTYPES) || status=1; \
	$(VENV)/bin/python bench/torch_gdr.py --compare $(BUILD)/bench.json --peers $(BENCH_PEERS) || status=1; \
	$(VENV)/bin/python bench/torch_conv.py --compare $(BUILD)/bench.json --peers $(BENCH_PEERS) || status=1; \
	$(VENV)/bin/python bench/py_bench.py || status=1; \
	$(VENV)/bin/python bench/transformers_qwen3_next_layer.py || status=1; \
	$(VENV)/bin/python bench/context_parallel.py || status=1; \
	$(VENV)/bin/python examples/qwen3_next_transformers.py --prompt 512 --new-tokens 16 || status=1; \
	exit $$status

# The wheel (scikit-build-core, build dir build-py/, no build isolation: the build requirements are in .venv/),
# installed into .venv/. Elsewhere: pip install . (python/README.md).
# The wheel's module links build/'s libtxops_internal.a (TXOPS_PREBUILT_INTERNAL, CMakeLists.txt): the library is
# compiled once for both (a plain `pip install .` compiles it itself).
python: build $(VENV)/requirements.txt
	rm -f $(PY_BUILD)/dist/txops-*.whl
	$(VENV)/bin/python -m pip wheel -qq --no-build-isolation --no-deps -C build-dir=$(PY_BUILD) \
	  -C cmake.define.TXOPS_PREBUILT_INTERNAL=$(abspath $(BUILD))/libtxops_internal.a -w $(PY_BUILD)/dist .
	$(VENV)/bin/python -m pip install -qq --no-deps --force-reinstall $(PY_BUILD)/dist/txops-*.whl

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD) $(PY_BUILD)

# ---- fuzzing (fuzz/README.md): libFuzzer targets built with clang, ASan + UBSan ------------------------------------
#   make fuzz               build, then run every target for FUZZ_SECONDS (default 30) on its seed corpus: one
#                           summary line per target (executions, coverage, result), fails when one crashes
#   make fuzz-plant-check   build with the planted out-of-bounds write (TXOPS_FUZZ_PLANT_OOB, one RoPE kernel line)
#                           and check that fuzz_interleave_rope finds it (fails when it does not)
#   make fuzz-seeds         rewrite the seeds fuzz/corpus/*/seed_* (fuzz/seed_gen.cpp)
FUZZ_BUILD ?= build-fuzz
FUZZ_PLANT_BUILD ?= build-fuzz-plant
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?= interleave_rope inplace_partial_rotary_mul inplace_partial_rotary_mul_grad apply_rotary_pos_emb_v2 \
                apply_rotary_pos_emb_grad chunk_gated_delta_rule recurrent_gated_delta_rule causal_conv1d \
                rotary_position_embedding rope_with_sin_cos_cache runtime
FUZZ_APT_PACKAGES := cmake make pkg-config libhwy-dev libomp-dev clang libclang-rt-14-dev
FUZZ_CMAKE := $(SAN_FLAGS) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
              -DTXOPS_BUILD_FUZZERS=ON -DTXOPS_BUILD_TESTS=OFF -DTXOPS_BUILD_TOOLS=OFF -DTXOPS_BUILD_PYTHON=OFF

.PHONY: fuzz test-fuzz fuzz-deps fuzz-build fuzz-seeds fuzz-plant-check

fuzz-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(FUZZ_APT_PACKAGES)"

fuzz-build: fuzz-deps
	@cmake -S . -B $(FUZZ_BUILD) $(FUZZ_CMAKE) -DTXOPS_FUZZ_PLANT_OOB=OFF > /dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS)

fuzz: fuzz-build
	@fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# A fixed libFuzzer seed: the same inputs in the same order on every run, so the pass is a regression check, not
# a lottery (exploration with fresh seeds is `make fuzz`).
test-fuzz: fuzz-build
	@FUZZ_FLAGS="-seed=1 $(FUZZ_FLAGS)" fuzz/run.sh $(FUZZ_BUILD) $(TEST_FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-seeds: fuzz-build
	$(FUZZ_BUILD)/fuzz/fuzz_seed_gen fuzz/corpus

fuzz-plant-check: fuzz-deps
	@cmake -S . -B $(FUZZ_PLANT_BUILD) $(FUZZ_CMAKE) -DTXOPS_FUZZ_PLANT_OOB=ON > /dev/null
	@cmake --build $(FUZZ_PLANT_BUILD) -j$(JOBS) --target fuzz_interleave_rope
	@rm -rf $(FUZZ_PLANT_BUILD)/fuzz-work
	@fuzz/run.sh --expect-crash $(FUZZ_PLANT_BUILD) $(FUZZ_SECONDS) interleave_rope
	@grep -m1 'ERROR: AddressSanitizer' $(FUZZ_PLANT_BUILD)/fuzz-work/logs/interleave_rope.log
	@grep -m1 -A3 'WRITE of size' $(FUZZ_PLANT_BUILD)/fuzz-work/logs/interleave_rope.log | grep -m1 'kernels_rotate.cpp'
