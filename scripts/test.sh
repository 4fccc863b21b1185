#!/usr/bin/env bash
# The whole test suite on real services: installs what is missing, starts a throwaway
# PostgreSQL and Redis on loopback, runs lint and pytest against them, stops them.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/test_import.py -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh
make -s venv
# The real OpenID provider the sign-in tests start (tests/oidc_provider/): its npm packages, from the lock file,
# only when they are missing or older than it.
oidc=tests/oidc_provider
if [ ! -f "$oidc/node_modules/.package-lock.json" ] || [ "$oidc/package-lock.json" -nt "$oidc/node_modules/.package-lock.json" ]; then
  (cd "$oidc" && npm ci --no-audit --no-fund --loglevel=error)
fi
export ICEWATER_PG_PORT=${ICEWATER_PG_PORT:-55432} ICEWATER_REDIS_PORT=${ICEWATER_REDIS_PORT:-56379}
own_services=0
if ! pg_isready -h 127.0.0.1 -p "$ICEWATER_PG_PORT" >/dev/null 2>&1; then own_services=1; fi
bash scripts/services.sh start
if [ "$own_services" -eq 1 ]; then trap 'bash scripts/services.sh stop' EXIT; fi
eval "$(bash scripts/services.sh env)"
export ICEWATER_DATA_DIR=${ICEWATER_DATA_DIR:-$(mktemp -d /tmp/icewater-test-data.XXXXXX)}
export ICEWATER_SECRET_KEY=${ICEWATER_SECRET_KEY:-test-only-secret-key-not-for-production}
export ICEWATER_DEBUG=0 ICEWATER_SECURE_COOKIES=0
# Distinct names per run, so several runs can share one PostgreSQL and Redis.
export ICEWATER_TEST_DB_NAME=${ICEWATER_TEST_DB_NAME:-test_icewater_$$}
export ICEWATER_CELERY_QUEUE=${ICEWATER_CELERY_QUEUE:-icewater-test-$$}
# ICEWATER_SKIP_LINT=1 skips lint, type checking and the migrations check (for a quick run of one file).
if [ "${ICEWATER_SKIP_LINT:-0}" != "1" ]; then
  .venv/bin/ruff check .
  .venv/bin/ruff format --check .
  # mypy with django-stubs over the app packages and config ([tool.mypy] in pyproject.toml); an error fails the run.
  .venv/bin/mypy
  .venv/bin/python manage.py makemigrations --check --dry-run >/dev/null ||
    { echo "models and migrations disagree: run manage.py makemigrations" >&2; exit 1; }
fi
.venv/bin/python -m pytest "$@"
