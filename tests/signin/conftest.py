from __future__ import annotations

import pytest

from signin.provider import forget_discovery
from tests.oidc_helpers import Provider


@pytest.fixture(autouse=True)
def fresh_discovery():
    forget_discovery()
    yield
    forget_discovery()


@pytest.fixture
def start_provider(tmp_path):
    """start_provider(misbehave="", base_urls=("http://testserver",)): a running provider, stopped after the test."""
    started: list[Provider] = []

    def start(misbehave: str = "", base_urls: tuple[str, ...] = ("http://testserver",)) -> Provider:
        provider = Provider(base_urls=list(base_urls), misbehave=misbehave)
        started.append(provider)
        provider.start(tmp_path / f"provider-{len(started)}.log")
        return provider

    yield start
    for provider in started:
        provider.stop()
