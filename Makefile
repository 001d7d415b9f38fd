# Two entry points on a fresh machine:
#   make demo   create .venv, install cnmtune, tune va and gemv on the embedded default
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
	@# one small run compiles the simulator's native code (about a minute), so that no later
	@# command pays it, nor several processes of the test suite at once
	$(VENV)/bin/cnmtune -q run va --size small > /dev/null
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/cnmtune tune va --size small --pipelines 100 --top-k 10 --no-save
	$(VENV)/bin/cnmtune tune gemv --size small --pipelines 100 --top-k 10 --no-save

test: $(VENV)/.installed
	$(PY) -m pytest -q -n auto

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
