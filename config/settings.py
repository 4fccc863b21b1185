"""Icewater settings: one module, read from the environment.

With no environment at all the app runs on embedded defaults (SQLite in a local
data folder, a Celery broker on the file system) so `make run` needs no server.
`DATABASE_URL` switches to PostgreSQL and `CELERY_BROKER_URL` to Redis.
Every helper below rejects a bad value loudly instead of falling back silently.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from alerts import rules as alert_rules
from judging import allowlist
from signin.issuer import issuer_origin
from signin.role_map import Grant, parse_role_map

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
try:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(f"ICEWATER_DATA_DIR={str(DATA_DIR)!r} cannot be created ({exc.strerror})") from None

# The embedded default (no DATABASE_URL) is what `make run` serves, also to other machines (HOST=0.0.0.0): debug
# only when asked. Django's debug pages list every URL pattern on a wrong address and a traceback with local
# variables on an error.
EMBEDDED = not env_str("DATABASE_URL")
DEBUG = env_bool("ICEWATER_DEBUG", default=False)


def _kept_secret_key(path: Path) -> str:
    """The embedded default's key: made once into the data folder, readable by its owner only, never printed.

    Kept across restarts, so a restart signs nobody out. Written under another name and linked into place, which
    never replaces a file: two processes starting at once on a new data folder both end up with the first key.
    """
    try:
        if not path.exists():
            draft = path.with_name(f".{path.name}.{os.getpid()}")
            draft.unlink(missing_ok=True)
            descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(descriptor, "w") as file:
                    file.write(secrets.token_urlsafe(50))
                os.link(draft, path)
            except FileExistsError:
                pass
            finally:
                draft.unlink(missing_ok=True)
        key = path.read_text().strip()
    except OSError as exc:
        problem = f"the secret key file {str(path)!r} cannot be made or read ({exc.strerror})"
        raise ImproperlyConfigured(problem) from None
    if not key:
        raise ImproperlyConfigured(f"the secret key file {str(path)!r} is empty: remove it and a new key is made")
    return key


def _secret_key() -> str:
    key = env_str("ICEWATER_SECRET_KEY")
    if key:
        return key
    if not DEBUG and not EMBEDDED:
        # Every web server on one database must sign with one key: a file on one machine cannot be that.
        raise ImproperlyConfigured(
            "ICEWATER_SECRET_KEY must be set when debug is off and DATABASE_URL is set (every web server on that "
            "database needs the same key); make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    return _kept_secret_key(DATA_DIR / "secret_key")


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
    "csp",
    "axes",
    "evals",
    "signin",
    "labeling",
    "judging",
    "alerts",
    "calibration",
    "formats",
    "watch",
    "ninja",  # its templates and static files: the API docs page serves Swagger UI from here, no CDN
    "api",
    "periodic",
    "overview",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "config.token_throttle.failed_token_throttle",  # before anything reads a session: API calls carry none
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "evals.current_workspace.current_workspace",  # request.workspace: the session's, or the address's ?workspace=
    "django.contrib.messages.middleware.MessageMiddleware",
    "config.not_allowed.method_not_allowed_page",  # a GET on a form's target: a page, not a blank 405
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.errors.NotFoundPage",  # a view's Http404 gets the site's 404 page, debug or not
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: turns a lockout into its page
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
                "config.context_processors.workspace",
            ],
        },
    },
]


# Every SQLite database gets these, the embedded default and a DATABASE_URL=sqlite:///... alike: several
# writers (gunicorn's workers and threads, the Celery worker) share the file. Without them 8 annotators
# saving at once got "database is locked" on about 30% of requests.
# - timeout: a writer waits this many seconds for the lock instead of failing at once.
# - IMMEDIATE: a transaction takes the write lock when it begins. A DEFERRED one that reads and then
#   writes must upgrade its lock, and SQLite refuses that at once, whatever the timeout, when another
#   connection is writing (the wait could deadlock).
# - WAL: readers no longer block the writer nor it them, so a page load never holds up a save. Kept in
#   the file once set; it needs a local disk (not NFS). synchronous stays at SQLite's FULL: a
#   submitted label must survive a power cut.
SQLITE_OPTIONS = {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL"}


def _database() -> dict:
    url = env_str("DATABASE_URL")
    if not url:
        name = DATA_DIR / "icewater.sqlite3"
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name, "OPTIONS": dict(SQLITE_OPTIONS)}
    try:
        # Connections persist across requests (CONN_MAX_AGE); the health check makes a worker notice at the start
        # of a request that the database dropped its connection (a restart, a failover) and reconnect, where it
        # would otherwise answer that request with a 500.
        config = dj_database_url.parse(
            url, conn_max_age=env_int("ICEWATER_DB_CONN_MAX_AGE", 60, minimum=0), conn_health_checks=True
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
    if config.get("ENGINE") not in {"django.db.backends.postgresql", "django.db.backends.sqlite3"}:
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres://...) or SQLite (sqlite:///...)")
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend, with a health check that needs no round trip on a sound connection (its docstring).
        config["ENGINE"] = "config.postgresql"
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # Options written in the URL (sqlite:///x?timeout=60) override ours, one by one.
        config["OPTIONS"] = {**SQLITE_OPTIONS, **config.get("OPTIONS", {})}
    test_name = env_str("ICEWATER_TEST_DB_NAME")
    if test_name:
        config["TEST"] = {"NAME": test_name}
    return dict(config)  # a plain dict, as the SQLite default above


DATABASES = {"default": _database()}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "evals.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
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

# Uploads are parsed as a stream; this only bounds what Django keeps in memory per file (a bigger one goes to a
# temporary file).
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# A request's fields other than files, together (the forms' text and the gate's JSON body are a few KB; pushes
# read their body as a stream, under ICEWATER_UPLOAD_MAX_MB). Django answers 400 beyond it.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
# Every form of Icewater takes one file: a request with more is refused (400) before any is stored. The files'
# bytes together are bounded by ICEWATER_UPLOAD_MAX_MB as well (formats.views.UploadLimit).
DATA_UPLOAD_MAX_NUMBER_FILES = 1
# The largest file the upload page imports (formats.views.UploadLimit), and an API push. A push is imported
# inside the web request, which must end well before the web worker's timeout (gunicorn's default: 30 s). The
# slowest import, labels into SQLite, ran at about 1 MB a second on the 2-core development machine (200,000
# labels, 26 MB, in 25 s), so 10 MB stays near a third of that timeout; the page hands files over
# ICEWATER_UPLOAD_INLINE_MB to a Celery worker. The command line has no limit.
ICEWATER_UPLOAD_MAX_BYTES = env_int("ICEWATER_UPLOAD_MAX_MB", 10, minimum=1) * 1024 * 1024
# Files up to this size import while the Import page waits; a larger one is imported by a Celery worker while the
# page shows how far it has got (formats/import_jobs.py): a legal 9.7 MB file of 200,000 lines outlasted
# gunicorn's 30 s timeout. A megabyte imports in about a second, the slowest way (labels into SQLite).
ICEWATER_UPLOAD_INLINE_BYTES = env_int("ICEWATER_UPLOAD_INLINE_MB", 1, minimum=0) * 1024 * 1024
# Compressed files (an Inspect AI .eval log is a zip archive): the most one may expand to in all, any one member,
# and how many members it may have, checked before anything decompresses it (formats/archives.py). The limit
# above counts compressed bytes: a 214 KB .eval expanded to a 200 MB response and grew a web worker to 2 GB.
# The page and the API: inspect_ai holds a whole log in memory, several times its JSON, so 50 MB of it stays
# well under a GB. The command line runs outside the web workers, on files the operator chose: larger bounds.
ICEWATER_UPLOAD_MAX_EXPANDED_BYTES = env_int("ICEWATER_UPLOAD_MAX_EXPANDED_MB", 50, minimum=1) * 1024 * 1024
ICEWATER_UPLOAD_MAX_MEMBER_BYTES = env_int("ICEWATER_UPLOAD_MAX_MEMBER_MB", 20, minimum=1) * 1024 * 1024
ICEWATER_UPLOAD_MAX_MEMBERS = env_int("ICEWATER_UPLOAD_MAX_MEMBERS", 10_000, minimum=1)
ICEWATER_CLI_MAX_EXPANDED_BYTES = env_int("ICEWATER_CLI_MAX_EXPANDED_MB", 2048, minimum=1) * 1024 * 1024
ICEWATER_CLI_MAX_MEMBER_BYTES = env_int("ICEWATER_CLI_MAX_MEMBER_MB", 512, minimum=1) * 1024 * 1024
ICEWATER_CLI_MAX_MEMBERS = env_int("ICEWATER_CLI_MAX_MEMBERS", 1_000_000, minimum=1)

# OpenTelemetry traces (POST /api/otlp/v1/traces, api/otlp.py; docs/formats.md "OpenTelemetry"). An export's body,
# compressed and decompressed, is bounded like an upload (ICEWATER_UPLOAD_MAX_MB; the OTel SDKs send batches of
# 512 spans, far below it). One span (its attributes and events, as protobuf) may hold at most
# ICEWATER_OTLP_MAX_SPAN_KB: a larger one is refused and counted as rejected. A trace becomes an output once its root
# span is in and none of its spans has arrived for ICEWATER_OTLP_QUIET_SECONDS (the SDK's batch processor exports
# every 5 s); one whose root never comes is refused after ICEWATER_OTLP_ROOTLESS_SECONDS. Over
# ICEWATER_OTLP_MAX_WAITING_SPANS spans waiting for one token's traces to finish, exports are answered 429 with
# Retry-After (no worker finishes them, or they come faster than it does).
ICEWATER_OTLP_MAX_SPAN_BYTES = env_int("ICEWATER_OTLP_MAX_SPAN_KB", 256, minimum=1) * 1024
ICEWATER_OTLP_QUIET_SECONDS = env_int("ICEWATER_OTLP_QUIET_SECONDS", 5, minimum=0)
ICEWATER_OTLP_ROOTLESS_SECONDS = env_int("ICEWATER_OTLP_ROOTLESS_SECONDS", 600, minimum=1)
ICEWATER_OTLP_MAX_WAITING_SPANS = env_int("ICEWATER_OTLP_MAX_WAITING_SPANS", 500_000, minimum=1)

# Sessions live in the database (Django's default engine), so they stay revocable on the server.


# Sign-in with OpenID Connect (signin/; docs/security.md, "Sign-in with OpenID Connect"). On when
# ICEWATER_OIDC_ISSUER is set; then the client's id and secret and a role map are needed, and each is refused
# alone (a typo in a name would otherwise switch nothing on, silently).
def _oidc_issuer() -> str:
    raw = env_str("ICEWATER_OIDC_ISSUER").strip()
    if not raw:
        return ""
    parts = urlsplit(raw)
    loopback = parts.hostname in {"127.0.0.1", "localhost", "::1"}
    if (
        not parts.hostname
        or parts.query
        or parts.fragment
        or not (parts.scheme == "https" or (parts.scheme == "http" and loopback))
    ):
        raise ImproperlyConfigured(
            f"ICEWATER_OIDC_ISSUER={raw!r} is not an issuer URL (https://..., without ? or #; http only on loopback)"
        )
    return raw


def _oidc_role_map(enabled: bool) -> tuple[Grant, ...]:
    raw = env_str("ICEWATER_OIDC_ROLE_MAP")
    try:
        grants = parse_role_map(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"ICEWATER_OIDC_ROLE_MAP: {exc}") from None
    if enabled and not grants:
        raise ImproperlyConfigured("ICEWATER_OIDC_ROLE_MAP must map at least one GROUP=WORKSPACE:ROLE")
    return grants


ICEWATER_OIDC_ISSUER = _oidc_issuer()
ICEWATER_OIDC_CLIENT_ID = env_str("ICEWATER_OIDC_CLIENT_ID").strip()
ICEWATER_OIDC_CLIENT_SECRET = env_str("ICEWATER_OIDC_CLIENT_SECRET")
ICEWATER_OIDC_GROUPS_CLAIM = env_str("ICEWATER_OIDC_GROUPS_CLAIM", "groups").strip() or "groups"
ICEWATER_OIDC_ROLE_MAP = _oidc_role_map(bool(ICEWATER_OIDC_ISSUER))
# An email address is kept only when the provider says it verified it (email_verified): 0 for a provider that
# never says, whose addresses the company vouches for.
ICEWATER_OIDC_VERIFIED_EMAIL = env_bool("ICEWATER_OIDC_VERIFIED_EMAIL", True)
for _name, _value in (
    ("ICEWATER_OIDC_CLIENT_ID", ICEWATER_OIDC_CLIENT_ID),
    ("ICEWATER_OIDC_CLIENT_SECRET", ICEWATER_OIDC_CLIENT_SECRET),
    ("ICEWATER_OIDC_ROLE_MAP", ICEWATER_OIDC_ROLE_MAP),
):
    if ICEWATER_OIDC_ISSUER and not _value:
        raise ImproperlyConfigured(f"{_name} must be set when ICEWATER_OIDC_ISSUER is")
    if _value and not ICEWATER_OIDC_ISSUER:
        raise ImproperlyConfigured(f"{_name} is set but ICEWATER_OIDC_ISSUER is not: set the issuer too")
# 0: no password sign-in anywhere (the login page, the admin's), only the company's; needs a provider.
ICEWATER_PASSWORD_LOGIN = env_bool("ICEWATER_PASSWORD_LOGIN", True)
if not ICEWATER_PASSWORD_LOGIN and not ICEWATER_OIDC_ISSUER:
    raise ImproperlyConfigured("ICEWATER_PASSWORD_LOGIN=0 needs ICEWATER_OIDC_ISSUER: nobody could sign in")

# django-axes first: it refuses a locked-out username+address before any password is checked. With password
# sign-in off no backend checks a password at all (the pages refuse the form before that). The OpenID backend
# answers only a callback with a code, and reads the network only then.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *(["django.contrib.auth.backends.ModelBackend"] if ICEWATER_PASSWORD_LOGIN else []),
    "signin.backend.OIDCBackend",
]
# Login throttling (django-axes; docs/security.md). After LOGIN_FAILURE_LIMIT wrong passwords in a row
# for one username from one address, that pair is refused for LOGIN_COOL_OFF, even with the right
# password. 5: a person who mistypes gets it within two or three tries, and a correct login clears the
# count; a guesser gets 5 tries per 15 minutes per username and address, 480 a day, hopeless against
# the 8+ character passwords the validator asks for. Per username+address, not per username: a
# stranger cannot lock a colleague out from elsewhere, and other people behind the same address keep
# logging in. A lead unlocks early in the admin (Axes > Access attempts: delete the row).
LOGIN_FAILURE_LIMIT = 5
LOGIN_COOL_OFF = timedelta(minutes=15)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = LOGIN_COOL_OFF
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# The cool-off runs from the lockout: more tries while locked out do not push it further away.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

# Failed token attempts on the JSON API and the HTTP gate (config/token_throttle.py; docs/security.md): after
# 30 answers 401 (missing, unknown or revoked token) to one client address within a 60-second window, that
# address gets 429 with Retry-After until the window ends. A CI job sends a handful of calls a run, all with
# a valid token (never counted); 30 leaves room for a misconfigured one to see its 401s, while a scanner
# gets 30 attempts a minute instead of the hundreds a second it gets unthrottled.
API_TOKEN_FAILURE_LIMIT = 30
API_TOKEN_FAILURE_WINDOW = 60


def axes_username(request, credentials: dict | None) -> str | None:
    """The username axes records and locks on, cut to the 255 characters its column holds.

    Django's login forms check the username's length only in the browser (maxlength), so a longer one
    reaches authentication, fails, and PostgreSQL refused axes' record of it: a 500. No account has a
    name that long (150 at most), so the cut merges no lockouts that matter.
    """
    username = credentials.get("username") if credentials else request.POST.get("username")
    return username[:255] if isinstance(username, str) else None


AXES_USERNAME_CALLABLE = axes_username
# Behind reverse proxies every request comes from the nearest proxy's address: with the number of proxies
# that append to X-Forwarded-For, throttling counts per client address again (config/client_ip.py).
ICEWATER_TRUSTED_PROXIES = env_int("ICEWATER_TRUSTED_PROXIES", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
# An htmx post refused by the CSRF check is told why in words the page can show (config/errors.py).
CSRF_FAILURE_VIEW = "config.errors.csrf_failure"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp), on every response, debug or not: every script, style sheet,
# image, font, fetch and form target comes from this site, nothing inline. The templates and
# static/js hold no inline script, event handler or style attribute (bar widths are pct-N classes,
# icewater.css); htmx is told by <meta name="htmx-config"> (base.html) not to inject its indicator
# <style> and not to evaluate code from attributes. A transcript that got past escaping still could
# not run script. Django's debug 404/500 pages are left without it (django-csp's own exemption). Forms may
# also lead to the identity provider: the logout form redirects to its end_session_endpoint (signin/issuer.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'", *([issuer_origin(ICEWATER_OIDC_ISSUER)] if ICEWATER_OIDC_ISSUER else [])],
        "frame-ancestors": ["'none'"],
    },
}
# Behind a proxy that ends TLS, Django sees plain HTTP unless it may trust the proxy's header saying
# the browser used https. Set ICEWATER_PROXY_SSL_HEADER (e.g. X-Forwarded-Proto) only when the proxy
# sets that header itself, overwriting whatever the client sent.
_proxy_ssl_header = env_str("ICEWATER_PROXY_SSL_HEADER").strip()
if _proxy_ssl_header:
    if not all(ch.isalnum() or ch == "-" for ch in _proxy_ssl_header):
        raise ImproperlyConfigured(f"ICEWATER_PROXY_SSL_HEADER={_proxy_ssl_header!r} is not a header name")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")
if not DEBUG:
    # The embedded default is served by gunicorn itself, over plain HTTP, where a browser would not send a secure
    # cookie back (nobody could sign in); with DATABASE_URL the app sits behind a TLS proxy (README).
    SESSION_COOKIE_SECURE = env_bool("ICEWATER_SECURE_COOKIES", not EMBEDDED)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
if not DEBUG and SESSION_COOKIE_SECURE:
    # Secure cookies mean the site is served over https: browsers are then told to use nothing else.
    # One year, the max-age the HSTS preload list asks for and Mozilla's guidelines use; Django sends
    # it on https responses only. Preloading is the whole domain owner's call: not asked for here.
    SECURE_HSTS_SECONDS = env_int("ICEWATER_HSTS_SECONDS", 365 * 24 * 3600, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Django redirects http to https itself only when it can tell them apart behind the proxy;
    # without the proxy's header every request looks like http and the redirect would loop.
    SECURE_SSL_REDIRECT = bool(_proxy_ssl_header)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # a load balancer's plain-http health check
SILENCED_SYSTEM_CHECKS = [
    # security.W021 (HSTS preload not set): putting a domain on the browsers' preload list binds every
    # subdomain of it, for months; that is the domain owner's decision, not this app's.
    "security.W021",
]
if not DEBUG and SESSION_COOKIE_SECURE and not _proxy_ssl_header:
    # security.W008 (SECURE_SSL_REDIRECT off): without a trusted proxy header Django cannot tell https
    # from http behind the TLS proxy, so that proxy is what redirects http to https (docs/security.md).
    SILENCED_SYSTEM_CHECKS.append("security.W008")

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
CACHES = {
    # Report figures cached under a digest of the data they come from (calibration/data/content_cache.py), so an
    # entry is never stale, and the failed-token counts (config/token_throttle.py). Files in the data folder:
    # every gunicorn worker of one machine shares them, across restarts.
    "default": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(DATA_DIR / "cache"),
        "OPTIONS": {"MAX_ENTRIES": 2000},
    },
    # How far a background import has read (formats/import_jobs.py). Not in the database: the import holds its
    # transaction (on SQLite, the write lock) until it ends. Redis beside the broker, or files in the data folder
    # with the embedded broker (web and worker on one machine); keys carry the queue name, so installations
    # sharing a Redis do not mix.
    "progress": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CELERY_BROKER_URL}
        if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
        else {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": DATA_DIR / "progress"}
    )
    | {"KEY_PREFIX": env_str("ICEWATER_CELERY_QUEUE", "icewater")},
}
# Sessions: with Redis beside the broker, read from it and written through to the database (cached_db): a signed-in
# request reads its session from Redis instead of a database query, which on a busy server was a round trip of every
# page and save (docs/labeling.md, Load). The database keeps every session, so a Redis restart signs nobody out.
# Ending sessions goes through the session engine (evals/accounts.py), which deletes the cached copy too. Without
# Redis (the embedded default) the database alone, as before: a file cache would cost more than the query it saves.
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CACHES["sessions"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CELERY_BROKER_URL,
        "KEY_PREFIX": env_str("ICEWATER_CELERY_QUEUE", "icewater") + ":sessions",
    }
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    SESSION_CACHE_ALIAS = "sessions"
# Progress lives in the database (JudgeRun rows), so task results are not kept.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = env_str("ICEWATER_CELERY_QUEUE", "icewater")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Periodic work (periodic/jobs.py): exactly one `celery -A config beat` sends each job once per slot of its period,
# and a worker claims each run once, so a restarted or second beat neither skips nor doubles one. Its schedule file
# (each job's last send) lives in the data folder. Every ICEWATER_TRACE_SWEEP_SECONDS the traces of every token
# whose spans wait are finished (formats/trace_outputs.py), also those no export scheduled a finisher for.
CELERY_BEAT_SCHEDULER = "periodic.scheduler:SlotScheduler"
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
ICEWATER_TRACE_SWEEP_SECONDS = env_int("ICEWATER_TRACE_SWEEP_SECONDS", 60, minimum=1)
# Every ICEWATER_WATCH_UPDATE_SECONDS each active watch is updated (watch/feed.py): new outputs drawn and sent to
# the judge, drawn ones released to annotators, and what is ready fed to its statistics.
ICEWATER_WATCH_UPDATE_SECONDS = env_int("ICEWATER_WATCH_UPDATE_SECONDS", 60, minimum=1)

# What a judge config may read its API key from and send it to: operator allowlists (the rule, the
# defaults and why: judging/allowlist.py; docs/judging.md). A reserved name listed here stops the start.
JUDGE_KEY_VARS = env_list("ICEWATER_JUDGE_KEY_VARS", list(allowlist.DEFAULT_KEY_VARS))
JUDGE_BASE_URL_HOSTS = env_list("ICEWATER_JUDGE_BASE_URL_HOSTS", list(allowlist.DEFAULT_BASE_URL_HOSTS))
_judge_lists_problem = allowlist.operator_list_problem(JUDGE_KEY_VARS, JUDGE_BASE_URL_HOSTS)
if _judge_lists_problem:
    raise ImproperlyConfigured(_judge_lists_problem)

# Alerts (alerts/; docs/alerts.md, docs/security.md "Alerts go only where allowed"): the hosts a webhook may name
# (the syntax of ICEWATER_JUDGE_BASE_URL_HOSTS; none by default, so nothing leaves until the operator names one),
# whether those may resolve to private addresses, the variables a signed webhook may read its secret from (reserved
# names stop the start), the timeout of each network step, and the waits between tries (seconds, comma-separated:
# five tries in about 41 minutes, then failed).
ICEWATER_ALERT_HOSTS = env_list("ICEWATER_ALERT_HOSTS", [])
ICEWATER_ALERT_PRIVATE_ADDRESSES = env_bool("ICEWATER_ALERT_PRIVATE_ADDRESSES", False)
ICEWATER_ALERT_SECRET_VARS = env_list("ICEWATER_ALERT_SECRET_VARS", [])
ICEWATER_ALERT_TIMEOUT_SECONDS = env_int("ICEWATER_ALERT_TIMEOUT_SECONDS", 5, minimum=1)


def _retry_delays() -> tuple[float, ...]:
    raw = env_list("ICEWATER_ALERT_RETRY_DELAYS", ["30", "120", "480", "1800"])
    try:
        delays = tuple(float(item) for item in raw)
    except ValueError:
        raise ImproperlyConfigured(f"ICEWATER_ALERT_RETRY_DELAYS={','.join(raw)!r} is not a list of seconds") from None
    if any(delay < 0 or delay != delay for delay in delays) or len(delays) > 20:
        raise ImproperlyConfigured("ICEWATER_ALERT_RETRY_DELAYS: at most 20 waits, each 0 seconds or more")
    return delays


ICEWATER_ALERT_RETRY_DELAYS = _retry_delays()
ICEWATER_ALERT_SWEEP_SECONDS = env_int("ICEWATER_ALERT_SWEEP_SECONDS", 60, minimum=1)
_alert_lists_problem = alert_rules.operator_lists_problem(ICEWATER_ALERT_SECRET_VARS, ICEWATER_ALERT_HOSTS)
if _alert_lists_problem:
    raise ImproperlyConfigured(_alert_lists_problem)


def _site_url() -> str:
    """ICEWATER_SITE_URL: where people reach this Icewater (https://icewater.example.com), for the absolute links in
    alerts, which leave the request that would otherwise tell the host. Scheme and host (and port) only: a path,
    query or credentials would be glued to every link. "" (the default): alerts carry no link."""
    raw = env_str("ICEWATER_SITE_URL").strip()
    if not raw:
        return ""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as exc:
        raise ImproperlyConfigured(f"ICEWATER_SITE_URL={raw!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ImproperlyConfigured(
            f"ICEWATER_SITE_URL={raw!r} must be http(s)://host, e.g. https://icewater.example.com"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ImproperlyConfigured(
            f"ICEWATER_SITE_URL={raw!r} must be only a scheme and a host (and port): no path, query or credentials"
        )
    return f"{parts.scheme}://{parts.netloc}"


ICEWATER_SITE_URL = _site_url()
# Email alerts go through Django's email backend: SMTP to ICEWATER_EMAIL_HOST (Django's defaults otherwise).
EMAIL_HOST = env_str("ICEWATER_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("ICEWATER_EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("ICEWATER_EMAIL_USER")
EMAIL_HOST_PASSWORD = env_str("ICEWATER_EMAIL_PASSWORD")
EMAIL_USE_TLS = env_bool("ICEWATER_EMAIL_STARTTLS", False)
DEFAULT_FROM_EMAIL = env_str("ICEWATER_EMAIL_FROM", "icewater@localhost")

# Probes of the judge beyond the built-in ones: dotted paths of judging.probes.Probe objects (docs/judging.md).
PROBES = env_list("ICEWATER_PROBES", [])

LOG_LEVEL = env_str("ICEWATER_LOG_LEVEL", "WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Expected refusals (403 "Not allowed", 404) as one line each; a 500 with its traceback (config/log_filters.py).
    "filters": {"quiet_refusals": {"()": "config.log_filters.QuietRefusals"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        # Django's default gives "django" its own console handler while debugging: with the root's, every
        # line came twice. One handler, the root's.
        "django": {"handlers": [], "level": LOG_LEVEL},
        "django.request": {"filters": ["quiet_refusals"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

# Audit plans' figures are computed in a worker (calibration/audits/stored_figures.py). The gate decides only on
# figures of the gold it reads: when they are behind it asks a worker and waits at most this long, then answers
# "undecided: figures updating" (exit 2, HTTP 503). The API's and the gate page's wait is inside a web request,
# which must end well before gunicorn's 30 s timeout: 20 s by default.
ICEWATER_GATE_FIGURES_WAIT_SECONDS = env_int("ICEWATER_GATE_FIGURES_WAIT_SECONDS", 20, minimum=0)
# From this many items (outputs x criteria) on, the calibration report's pages show the rows a worker stored instead
# of computing them in the request (issue 37; docs/calibration.md, "Performance"): below it a cold report fits the
# page's 250 ms.
ICEWATER_REPORT_STORED_FROM_ITEMS = env_int("ICEWATER_REPORT_STORED_FROM_ITEMS", 20_000, minimum=0)
