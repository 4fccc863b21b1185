#!/usr/bin/env bash
# `make run`: the app on the embedded defaults (SQLite, a Celery broker on the file system).
# Installs into .venv, migrates, loads the demo, starts a Celery worker, Celery beat (the periodic jobs,
# periodic/jobs.py) and the web server.
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py load_demo
DATA=${ICEWATER_DATA_DIR:-data}
mkdir -p "$DATA"
.venv/bin/celery -A config worker --loglevel=WARNING --pool threads --concurrency 4 >"$DATA/worker.log" 2>&1 &
worker=$!
# Exactly one beat per installation: its schedule file is in the data folder (settings.CELERY_BEAT_SCHEDULE_FILENAME).
.venv/bin/celery -A config beat --loglevel=WARNING >"$DATA/beat.log" 2>&1 &
beat=$!
trap 'kill $worker $beat 2>/dev/null || true' EXIT INT TERM
echo
echo "Icewater is running at http://$HOST:$PORT/  (Celery worker pid $worker, log $DATA/worker.log;"
echo "Celery beat pid $beat, log $DATA/beat.log)"
echo "Stop with Ctrl+C."
# Two sync workers, no threads: SQLite takes one writer at a time, and writers that find it busy poll
# with growing sleeps, so eight threads writing at once gave the slowest saves a long tail that people
# would feel; two writers at most keep saves short (bench/labeling_load.py --embedded prints the figures).
.venv/bin/gunicorn config.wsgi:application --bind "$HOST:$PORT" --workers 2 --threads 1 --access-logfile - \
  --error-logfile - --log-level warning
