# Two commands matter: `make run` (the app on embedded defaults) and `make test` (the suite on real services).
# `make test-fast` is the quick lane: the suite without browser, Celery-worker, subprocess and slow tests, in parallel.
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast venv demo worker web bench lint clean

$(VENV)/.installed: pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -c requirements.lock -e ".[dev]"
	touch $@

venv: $(VENV)/.installed

run: venv
	bash scripts/run.sh

test:
	bash scripts/test.sh

# Markers in pyproject.toml; tests/xdist_isolation.py gives each worker its own data folder and queue.
# WORKERS=auto is one per CPU; loadfile keeps a module on one worker (module fixtures load once).
WORKERS ?= auto
test-fast:
	ICEWATER_NO_BROWSER=1 bash scripts/test.sh -p tests.xdist_isolation -n $(WORKERS) --dist loadfile \
		-m "not browser and not celery and not subprocess and not slow"

demo: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) data
