# Two commands matter: `make run` (the app on embedded defaults) and `make test` (the suite on real services).
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test venv demo worker web bench lint clean

$(VENV)/.installed: pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -c requirements.lock -e ".[dev]"
	touch $@

venv: $(VENV)/.installed

run: venv
	bash scripts/run.sh

test:
	bash scripts/test.sh

demo: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) data
