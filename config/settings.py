"""Icewater settings: one module, read from the environment.

With no environment at all the app runs on embedded defaults (SQLite in a local
data folder, a Celery broker on the file system) so `make run` needs no server.
`DATABASE_URL` switches to PostgreSQL and `CELERY_BROKER_URL` to Redis.
Every helper below rejects a bad value loudly instead of falling back silently.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DATA_DIR = Path(env_str("ICEWATER_DATA_DIR", str(BASE_DIR / "data")))
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("ICEWATER_DEBUG", default="DATABASE_URL" not in os.environ)


def _secret_key() -> str:
    key = env_str("ICEWATER_SECRET_KEY")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured("ICEWATER_SECRET_KEY must be set when ICEWATER_DEBUG is off")
    # Embedded development default: a random key kept beside the SQLite file, never in the repo.
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ICEWATER_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("ICEWATER_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "labeling",
    "judging",
    "calibration",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.context_processors.navigation",
            ],
        },
    },
]


def _database() -> dict:
    url = env_str("DATABASE_URL")
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "icewater.sqlite3",
            # Several writers (web + worker) share the file: wait instead of failing at once.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    try:
        config = dj_database_url.parse(url, conn_max_age=env_int("ICEWATER_DB_CONN_MAX_AGE", 60, minimum=0))
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
    if config.get("ENGINE") not in {"django.db.backends.postgresql", "django.db.backends.sqlite3"}:
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres://...) or SQLite (sqlite:///...)")
    test_name = env_str("ICEWATER_TEST_DB_NAME")
    if test_name:
        config["TEST"] = {"NAME": test_name}
    return config


DATABASES = {"default": _database()}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "labeling.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "labeling:home"
LOGOUT_REDIRECT_URL = "login"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve straight from the app folders: no collectstatic step for the embedded default.
WHITENOISE_USE_FINDERS = True

# Uploads are parsed as a stream; this only bounds what Django keeps in memory per file.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Sessions live in the database (Django's default engine), so they stay revocable on the server.
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("ICEWATER_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# Celery: Redis when CELERY_BROKER_URL is set, otherwise a broker on the file
# system that needs no server (the embedded default).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "filesystem://"
    _broker_dir = DATA_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
elif not CELERY_BROKER_URL.startswith(("redis://", "rediss://", "filesystem://", "memory://")):
    raise ImproperlyConfigured("CELERY_BROKER_URL must be a redis:// URL (or filesystem:// for the embedded broker)")
# Progress lives in the database (JudgeRun rows), so task results are not kept.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = env_str("ICEWATER_CELERY_QUEUE", "icewater")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes every database connection before and after each task unless this is set;
# a judge lane then paid a new connection (~20 ms, measured) before its first model call. It closes them
# every this many tasks instead, and config/celery.py drops broken or CONN_MAX_AGE-old ones before each
# task, as Django does around a request.
CELERY_DB_REUSE_MAX = 1000

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("ICEWATER_LOG_LEVEL", "WARNING")},
}
