# Two entry points on a fresh machine:
#   make demo   create .venv, install cnmtune, run the main job on the embedded default
#   make test   create .venv, install cnmtune with test extras, run the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out

.PHONY: demo test clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit("cnmtune needs Python >= 3.11" if sys.version_info < (3, 11) else 0)'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/cnmtune compare benchmarks/prim/va --pipeline O0 --pipeline O2 \
		--random 1 --random-length 10 --seed 7 --tasklets 16 \
		--plot $(OUT)/demo_histograms.png --json-out $(OUT)/demo.json
	$(VENV)/bin/cnmtune run benchmarks/prim/va --tasklets 16 --dpus 4 --size 1048576

test: $(VENV)/.installed
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
