# Two commands on a fresh machine: `make demo` runs the main pipeline, `make test` runs the tests.
# Each creates .venv on first use; torch is installed first as the CPU build, pinned to 2.13.
VENV ?= .venv
PY := $(VENV)/bin/python
PIPELINE ?= pipelines/four_bottlenecks.yaml
PYTEST_ARGS ?= -n 2 --dist loadfile

.PHONY: setup demo test test-fast lint check clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/bottlenecks run $(PIPELINE)

test: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# The loop to run first after a change: everything not marked slow or server (tests/README.md)
test-fast: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS) -m "not slow and not server"

lint: setup
	$(VENV)/bin/ruff check flows components tests benchmarks
	$(VENV)/bin/ruff format --check flows components tests benchmarks

check: setup
	$(VENV)/bin/bottlenecks check pipelines/*.yaml

clean:
	rm -rf .bottlenecks

# A wheelhouse for a host without internet (docs/offline.md): PY_VERSION, PLATFORM, TORCH, TORCH_INDEX, EXTRAS
.PHONY: wheelhouse
wheelhouse:
	scripts/wheelhouse.sh build/wheelhouse
