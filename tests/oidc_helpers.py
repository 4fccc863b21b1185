"""A real OpenID provider on loopback (tests/oidc_provider/provider.mjs, the certified oidc-provider package on
Node), and a person signing in at its login page with `requests`, for the sign-in tests.

scripts/test.sh installs the provider's packages (npm ci) when they are missing or older than the lock file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

from tests.services import free_port

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc_provider"
START_WITHIN_S = 20
CLIENT_ID = "icewater"
CLIENT_SECRET = "icewater-test-client-secret"
# The groups of the provider's accounts (provider.mjs) and the map the tests configure.
ROLE_MAP_TEXT = "refund-annotators=refund-support:annotator,refund-leads=refund-support:lead"


@dataclass
class Provider:
    """One provider process; `misbehave` as provider.mjs reads it ("" for a provider that behaves)."""

    base_urls: list[str]
    misbehave: str = ""
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, log: Path) -> None:
        if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
            raise AssertionError(
                f"the provider's packages are missing: run `npm ci` in {PROVIDER_DIR} (scripts/test.sh does)"
            )
        clients = [
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": [f"{base}/oidc/callback/" for base in self.base_urls],
                "post_logout_redirect_uris": [f"{base}/accounts/login/" for base in self.base_urls],
            }
        ]
        env = {**os.environ, "PORT": str(self.port), "CLIENTS": json.dumps(clients), "MISBEHAVE": self.misbehave}
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                ["node", "provider.mjs"], cwd=PROVIDER_DIR, env=env, stdout=subprocess.PIPE, stderr=out
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()  # "listening ISSUER" once it listens, "" if it died
        if not line.startswith("listening "):
            self.stop()
            raise AssertionError(f"the OpenID provider did not start: {line!r}; see {log}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=START_WITHIN_S)

    def settings(self, **overrides) -> dict:
        """Icewater's settings for this provider (override_settings)."""
        from signin.role_map import parse_role_map

        return {
            "ICEWATER_OIDC_ISSUER": self.issuer,
            "ICEWATER_OIDC_CLIENT_ID": CLIENT_ID,
            "ICEWATER_OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "ICEWATER_OIDC_GROUPS_CLAIM": "groups",
            "ICEWATER_OIDC_ROLE_MAP": parse_role_map(ROLE_MAP_TEXT),
            "ICEWATER_OIDC_VERIFIED_EMAIL": True,
            **overrides,
        }


@contextmanager
def providers(log_dir: Path) -> Iterator[Callable[..., Provider]]:
    """start(misbehave="", base_urls=("http://testserver",)): a running provider, each stopped at the end."""
    started: list[Provider] = []

    def start(misbehave: str = "", base_urls: tuple[str, ...] = ("http://testserver",)) -> Provider:
        provider = Provider(base_urls=list(base_urls), misbehave=misbehave)
        started.append(provider)
        provider.start(log_dir / f"provider-{len(started)}.log")
        return provider

    try:
        yield start
    finally:
        for provider in started:
            provider.stop()


def sign_in_at_provider(browser: requests.Session, authorize_url: str, login: str, app_base: str) -> str:
    """Follow the provider from its authorization URL, log in as `login`, and return the URL it sends the
    person back to (at `app_base`), without opening it."""
    url = authorize_url
    for _ in range(10):
        if url.startswith(app_base):
            return url
        response = browser.get(url, allow_redirects=False, timeout=10)
        if response.status_code in (302, 303):
            url = urljoin(url, response.headers["Location"])
            continue
        form = re.search(r'<form[^>]*action="([^"]+)"[^>]*method="post"', response.text)
        assert response.status_code == 200 and form and 'name="login"' in response.text, response.text[:500]
        posted = browser.post(
            urljoin(url, form.group(1)),
            data={"prompt": "login", "login": login, "password": "any"},
            allow_redirects=False,
            timeout=10,
        )
        assert posted.status_code in (302, 303), posted.text[:500]
        url = urljoin(url, posted.headers["Location"])
    raise AssertionError(f"the provider never sent the person back: {url}")


def end_provider_session(browser: requests.Session, logout_url: str) -> str:
    """Confirm the provider's logout page ("Yes, sign me out") and return where it sends the person."""
    page = browser.get(logout_url, timeout=10)
    form = re.search(
        r'<form id="op.logoutForm" method="post" action="([^"]+)"><input type="hidden" name="xsrf" value="([^"]+)"',
        page.text,
    )
    assert form, page.text[:500]
    done = browser.post(
        urljoin(logout_url, form.group(1)),
        data={"xsrf": form.group(2), "logout": "yes"},
        allow_redirects=False,
        timeout=10,
    )
    assert done.status_code in (302, 303), done.text[:500]
    return urljoin(logout_url, done.headers["Location"])


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def memberships(username: str) -> dict[str, tuple[str, str]]:
    """{workspace slug: (role, source)} of the account `username`."""
    from evals.models import Membership

    rows = Membership.objects.filter(user__username=username).values_list("workspace__slug", "role", "source")
    return {slug: (role, source) for slug, role, source in rows}
