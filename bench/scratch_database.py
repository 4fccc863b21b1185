"""A scratch PostgreSQL database for a benchmark: found, created and dropped the same way by every script.

Imported by the scripts next to it (`python bench/x.py` puts this folder on sys.path).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    """DATABASE_URL when it names PostgreSQL, else the one `scripts/services.sh env` prints."""
    return service_url("DATABASE_URL", "postgres", "PostgreSQL")


def service_url(variable: str, scheme: str, service: str) -> str:
    """`variable` when it is a `scheme` URL, else the one `scripts/services.sh env` prints."""
    if os.environ.get(variable, "").startswith(scheme):
        return os.environ[variable]
    env = subprocess.run(["bash", str(ROOT / "scripts/services.sh"), "env"], capture_output=True, text=True, check=True)
    for line in env.stdout.splitlines():
        if line.startswith(f"export {variable}="):
            return line.split("=", 1)[1]
    raise SystemExit(f"no {service}: start it with scripts/services.sh start")


def create_database(base_url: str, name: str):
    """Create database `name`; return the autocommit admin connection that drop_database needs."""
    import psycopg

    admin = psycopg.connect(base_url, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    return admin


def drop_database(admin, name: str) -> None:
    """End every session still on `name` (a server that was killed leaves some), drop it, close `admin`."""
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        [name],
    )
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.close()


def server_env(env: dict, *, embedded: bool, name: str):
    """Point `env` (a copy of the environment, with ICEWATER_DATA_DIR set) at the bench's database, and make it
    this process's environment: embedded, `make run`'s settings (SQLite in the data folder, debug on, the key
    generated there); otherwise scratch database `name` on PostgreSQL, debug off. Returns the admin connection
    drop_database needs, or None."""
    import secrets

    admin = None
    env.pop("DATABASE_URL", None)
    if embedded:
        for variable in ("ICEWATER_DEBUG", "ICEWATER_SECRET_KEY", "ICEWATER_SECURE_COOKIES"):
            env.pop(variable, None)
    else:
        base_url = database_url()
        admin = create_database(base_url, name)
        env.update(
            DATABASE_URL=base_url.rsplit("/", 1)[0] + "/" + name,
            ICEWATER_SECRET_KEY=os.environ.get("ICEWATER_SECRET_KEY") or secrets.token_urlsafe(40),
            ICEWATER_DEBUG="0",
            ICEWATER_SECURE_COOKIES="0",
        )
    os.environ.clear()
    os.environ.update(env)
    return admin
