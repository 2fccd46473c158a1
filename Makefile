# txops — the two commands a new machine needs:
#   make bench   build, then run every operator on real-model shapes (txops bench): speed as a ratio to
#                same-run machine limits, error against the fp64 reference
#   make test    build, then run the whole test suite: C++ (gtest via ctest), the same under
#                AddressSanitizer + UndefinedBehaviorSanitizer, and the Python package's pytest suite
# Both install the Debian packages they need when missing, and can be run any number of times.
BUILD ?= build
SAN_BUILD ?= build-san
JOBS ?= $(shell nproc)
PYTHON := /usr/bin/python3
APT_PACKAGES := cmake g++ make pkg-config libhwy-dev libgtest-dev libbenchmark-dev libomp-dev \
                python3-dev python3-numpy python3-pytest python3-torch pybind11-dev \
                python3-setuptools python3-wheel python3-pip

.PHONY: all deps build build-san test test-cpp test-san test-python bench python install clean

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

build-san: deps
	cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXOPS_SANITIZE=address,undefined \
	  -DTXOPS_BUILD_TOOLS=OFF
	cmake --build $(SAN_BUILD) -j$(JOBS)

test-cpp: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-san: build-san
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(SAN_BUILD) --output-on-failure -j$(JOBS)

test-python: build
	@if [ -d python/tests ]; then PYTHONPATH=$(CURDIR)/python $(PYTHON) -m pytest -q python/tests; fi

test: test-san test-python test-cpp

# The PyTorch peers run even when a txops case failed; the exit status is txops bench's.
bench: build
	@status=0; $(BUILD)/txops bench --json $(BUILD)/bench.json || status=$$?; \
	if [ -f bench/torch_rope.py ]; then $(PYTHON) bench/torch_rope.py --compare $(BUILD)/bench.json || status=1; fi; \
	if [ -f bench/torch_gdr.py ]; then $(PYTHON) bench/torch_gdr.py --compare $(BUILD)/bench.json || status=1; fi; \
	if [ -f bench/py_bench.py ]; then PYTHONPATH=$(CURDIR)/python $(PYTHON) bench/py_bench.py || status=1; fi; \
	exit $$status

python: build
	TXOPS_CMAKE_BUILD_DIR=$(abspath $(BUILD)) $(PYTHON) -m pip install --no-build-isolation --no-deps --break-system-packages .

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
