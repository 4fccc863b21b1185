#!/usr/bin/env bash
# Throwaway PostgreSQL and Redis on loopback, for tests and benchmarks.
#   scripts/services.sh start   start both (reuses ones already running on the same ports)
#   scripts/services.sh stop    stop both and delete their data
#   scripts/services.sh env     print the DATABASE_URL / CELERY_BROKER_URL exports
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.
set -euo pipefail
PGPORT=${ICEWATER_PG_PORT:-55432}
REDISPORT=${ICEWATER_REDIS_PORT:-56379}
STATE=${ICEWATER_SERVICES_DIR:-/tmp/icewater-services-$PGPORT}
PGDATA="$STATE/pg"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_pg() {
  mkdir -p "$STATE"; chmod 755 "$STATE"
  if [ -f "$PGDATA/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    return
  fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$PGDATA"
    as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  fi
  # Durability is off: this cluster is thrown away after the run.
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
    -o "-p $PGPORT -k $PGDATA -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB" \
    start >/dev/null
  psql -h 127.0.0.1 -p "$PGPORT" -U postgres -qtA -c "SELECT 1 FROM pg_roles WHERE rolname='icewater'" | grep -q 1 ||
    psql -h 127.0.0.1 -p "$PGPORT" -U postgres -q -c "CREATE ROLE icewater LOGIN SUPERUSER PASSWORD 'icewater'"
  psql -h 127.0.0.1 -p "$PGPORT" -U postgres -qtA -c "SELECT 1 FROM pg_database WHERE datname='icewater'" | grep -q 1 ||
    psql -h 127.0.0.1 -p "$PGPORT" -U postgres -q -c "CREATE DATABASE icewater OWNER icewater"
}

start_redis() {
  if redis-cli -p "$REDISPORT" ping >/dev/null 2>&1; then return; fi
  mkdir -p "$STATE/redis"
  redis-server --port "$REDISPORT" --bind 127.0.0.1 --daemonize yes --save "" --appendonly no \
    --dir "$STATE/redis" --pidfile "$STATE/redis/redis.pid" --logfile "$STATE/redis/redis.log"
  for _ in $(seq 50); do redis-cli -p "$REDISPORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "redis did not start; see $STATE/redis/redis.log" >&2; exit 1
}

case "${1:-}" in
  start) start_pg; start_redis ;;
  stop)
    if [ -f "$PGDATA/postmaster.pid" ]; then as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1 || true; fi
    redis-cli -p "$REDISPORT" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$STATE" ;;
  env)
    echo "export DATABASE_URL=postgres://icewater:icewater@127.0.0.1:$PGPORT/icewater"
    echo "export CELERY_BROKER_URL=redis://127.0.0.1:$REDISPORT/0" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
