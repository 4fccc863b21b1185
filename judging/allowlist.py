"""Which environment variables a judge config may read its key from, and which hosts it may send it to.

A lead writes the judge config: the NAME of the variable holding its API key (`api_key_env`) and the
base URL the key goes to as a bearer token. The worker's environment holds every secret of the
deployment, so without a rule `api_key_env=DATABASE_URL` with `base_url=http://attacker.example/v1`
would send the database password to the attacker. The operator decides instead:

- ICEWATER_JUDGE_KEY_VARS lists the variables a judge may read (default: the usual provider key
  names). A reserved name (Icewater's own settings and the infrastructure's, see `reserved`) is
  never readable: listing one stops the start-up.
- ICEWATER_JUDGE_BASE_URL_HOSTS lists the hosts a base URL may name (default: loopback only);
  `*.example.com` allows every subdomain of example.com, `host:port` only that port. An empty base
  URL (the provider's own API, fixed by the SDK) is always allowed.

Pure functions, no Django: config/settings.py checks the operator's lists with them at start-up, and
the judge form, `add_judge`, the admin and the backends (at call time) check a config against them.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The key variables of the providers the two backends reach most often (each SDK's or provider's
# documented name). Anything else the operator adds to ICEWATER_JUDGE_KEY_VARS.
DEFAULT_KEY_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "FIREWORKS_API_KEY",
)
# Local model servers (Ollama, llama.cpp, vLLM) on this machine; a hosted endpoint must be listed.
DEFAULT_BASE_URL_HOSTS = ("localhost", "127.0.0.1", "[::1]")

# Never readable by a judge, whatever the operator lists: Icewater's settings (ICEWATER_*), Django's,
# the database's (DATABASE_URL, DB_*, PG*, POSTGRES*), the broker's (CELERY_*, BROKER_*, REDIS*), cloud
# credentials (AWS_*), TLS files (SSL_*), and any name that says it holds a secret or a password.
RESERVED_PREFIXES = (
    "ICEWATER_",
    "DJANGO_",
    "DATABASE",
    "DB_",
    "PG",
    "POSTGRES",
    "CELERY",
    "BROKER",
    "REDIS",
    "AWS_",
    "SSL_",
)
RESERVED_WORDS = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE_KEY")
RESERVED_RULE = "names starting with " + ", ".join(RESERVED_PREFIXES) + " or containing " + ", ".join(RESERVED_WORDS)


def reserved(name: str) -> bool:
    """True for a variable no judge may ever read (compared in upper case: the rule is about meaning)."""
    upper = name.upper()
    return upper.startswith(RESERVED_PREFIXES) or any(word in upper for word in RESERVED_WORDS)


def key_var_refusal(name: str, allowed: list[str] | tuple[str, ...]) -> str | None:
    """Why a judge may not read its key from variable `name` (None: it may)."""
    return var_refusal(
        name,
        allowed,
        reader=("a judge", "judges"),
        setting="ICEWATER_JUDGE_KEY_VARS",
        hint="; name the provider's key variable, e.g. OPENAI_API_KEY",
    )


def var_refusal(
    name: str, allowed: list[str] | tuple[str, ...], *, reader: tuple[str, str], setting: str, hint: str = ""
) -> str | None:
    """Why `reader` (one, many: "a judge", "judges") may not read variable `name` from the operator's list
    `setting` (None: it may). The one rule of every secret Icewater reads by a name someone wrote: judge keys here,
    webhook signing secrets in alerts/."""
    if reserved(name):
        return (
            f"{name} is reserved: {reader[0]} never reads Icewater's own settings or the infrastructure's "
            f"({RESERVED_RULE}){hint}"
        )
    if name not in allowed:
        shown = ", ".join(allowed) if allowed else "none"
        return f"{name} is not a variable {reader[1]} may read ({setting} allows: {shown})"
    return None


def _host_port(netloc: str) -> tuple[str, int | None]:
    parts = urlsplit(f"//{netloc}")
    return (parts.hostname or "").lower(), parts.port


def url_problem(url: str) -> str | None:
    """Why `url` is not a plain http:// or https:// URL naming a host (None: it is).

    Whitespace and control characters (CR, LF, TAB, NUL, U+2028, zero-width ones, ...) are refused anywhere
    in it: urlsplit silently drops CR, LF and TAB, so a check on its parts alone lets them through to the
    SDK, which breaks on them (or sends them on as a header line).
    """
    odd = next((c for c in url if c.isspace() or unicodedata.category(c).startswith("C")), None)
    if odd is not None:
        return f"must not contain whitespace or control characters (it has {ascii(odd)})"
    parts = urlsplit(url)
    # '@' (credentials) or a backslash in the host part are where URL parsers disagree about which host is
    # meant; a base URL never needs them.
    if parts.scheme not in ("http", "https") or not parts.netloc or re.search(r"[@\\]", parts.netloc):
        return "must be a plain http:// or https:// URL, e.g. https://api.openai.com/v1"
    try:
        host, _ = _host_port(parts.netloc)
    except ValueError:
        return "has a port that is not a number from 0 to 65535"
    if not host:
        return "must name a host, e.g. https://api.openai.com/v1"
    return None


def base_url_refusal(url: str, allowed_hosts: list[str] | tuple[str, ...]) -> str | None:
    """Why a judge may not send its key to `url` (None: it may). An empty URL is the provider's own API."""
    if not url:
        return None
    problem = url_problem(url)
    if problem:
        return problem
    if host_allowed(url, allowed_hosts):
        return None
    return (
        f"{host_not_allowed(url, allowed_hosts, 'judges may call', 'ICEWATER_JUDGE_BASE_URL_HOSTS')}; "
        "leave base_url empty for the provider's own API"
    )


def host_allowed(url: str, allowed_hosts: list[str] | tuple[str, ...]) -> bool:
    """True when the host (and port) of `url`, a URL `url_problem` passes, is one of `allowed_hosts`: `host`,
    `host:port` (that port only) or `*.domain` (every subdomain). The one matching rule of every operator host
    list (judge base URLs here, alert destinations in alerts/)."""
    host, port = _host_port(urlsplit(url).netloc)
    for entry in allowed_hosts:
        want, want_port = _host_port(entry)
        if want_port is not None and want_port != port:
            continue
        if host == want or (want.startswith("*.") and host.endswith(want[1:])):
            return True
    return False


def host_not_allowed(url: str, allowed_hosts: list[str] | tuple[str, ...], who: str, setting: str) -> str:
    """The words of a refusal by `host_allowed`: which host, what `setting` allows."""
    host, port = _host_port(urlsplit(url).netloc)
    shown = ", ".join(allowed_hosts) if allowed_hosts else "none"
    where = f"{host}:{port}" if port is not None else host
    return f"{where} is not a host {who} ({setting} allows: {shown})"


def operator_list_problem(key_vars: list[str], hosts: list[str]) -> str | None:
    """One line saying what is wrong with the operator's lists (None: both are fine). For start-up."""
    for name in key_vars:
        if not ENV_NAME_RE.match(name):
            return f"ICEWATER_JUDGE_KEY_VARS: {name!r} is not an environment variable name"
        if reserved(name):
            return (
                f"ICEWATER_JUDGE_KEY_VARS lists {name}, which no judge may read ({RESERVED_RULE} are "
                "Icewater's and the infrastructure's); remove it"
            )
    return host_list_problem("ICEWATER_JUDGE_BASE_URL_HOSTS", hosts)


def host_list_problem(setting: str, hosts: list[str]) -> str | None:
    """What is wrong with an operator's host list named `setting` (None: nothing). For start-up."""
    for entry in hosts:
        try:
            host, _ = _host_port(entry)
        except ValueError:
            return f"{setting}: {entry!r} has a port that is not a number"
        if "/" in entry or "@" in entry or not host or "*" in host.removeprefix("*."):
            return (
                f"{setting}: {entry!r} is not a host name (give hosts like api.openai.com, "
                "*.openai.azure.com or localhost:11434, not URLs)"
            )
    return None
