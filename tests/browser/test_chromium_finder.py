"""Which Chromium the browser tests drive: named, found on PATH, or Playwright's own; none is a failure, not a skip.

These tests drive no browser (no `browser` marker): they run in `make test-fast` too.
"""

from __future__ import annotations

import stat
from types import SimpleNamespace

import pytest

from .browser_helpers import ChromiumNotFound, find_chromium, launch_chromium


def executable(path):
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def on_path(**found):
    return lambda name: found.get(name)


def test_the_named_binary_wins_over_one_on_path(tmp_path):
    named = executable(tmp_path / "my-chrome")
    got = find_chromium(environ={"ICEWATER_CHROMIUM": named}, which=on_path(chromium="/usr/bin/chromium"))
    assert got == named


def test_a_named_binary_that_is_not_there_is_refused_not_replaced(tmp_path):
    missing = str(tmp_path / "nowhere" / "chrome")
    with pytest.raises(ChromiumNotFound, match="ICEWATER_CHROMIUM=.*nowhere/chrome is not an executable"):
        find_chromium(environ={"ICEWATER_CHROMIUM": missing}, which=on_path(chromium="/usr/bin/chromium"))


def test_a_named_file_that_cannot_run_is_refused(tmp_path):
    plain = tmp_path / "chrome.txt"
    plain.write_text("not a program")
    with pytest.raises(ChromiumNotFound, match="not an executable"):
        find_chromium(environ={"ICEWATER_CHROMIUM": str(plain)}, which=on_path())


def test_path_is_searched_in_order_chromium_first():
    both = on_path(chromium="/a/chromium", **{"google-chrome": "/b/google-chrome"})
    assert find_chromium(environ={}, which=both) == "/a/chromium"
    assert find_chromium(environ={}, which=on_path(**{"chromium-browser": "/c/cb"})) == "/c/cb"
    assert find_chromium(environ={}, which=on_path(**{"google-chrome": "/b/gc"})) == "/b/gc"


def test_playwrights_own_download_is_the_last_resort(tmp_path):
    own = executable(tmp_path / "chrome")
    assert find_chromium(own, environ={}, which=on_path()) == own
    # Something on PATH still comes first.
    assert find_chromium(own, environ={}, which=on_path(chromium="/a/chromium")) == "/a/chromium"


def test_no_chromium_anywhere_says_how_to_install_one(tmp_path):
    not_downloaded = str(tmp_path / "ms-playwright" / "chrome")  # where Playwright would put it: not there
    with pytest.raises(ChromiumNotFound) as missing:
        find_chromium(not_downloaded, environ={}, which=on_path())
    message = str(missing.value)
    assert "apt-get install chromium" in message
    assert "playwright install chromium" in message
    assert "ICEWATER_CHROMIUM" in message and not_downloaded in message


def test_a_missing_chromium_fails_the_browser_test_instead_of_skipping_it(tmp_path, monkeypatch):
    monkeypatch.delenv("ICEWATER_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: nothing to find
    launched = []
    playwright = SimpleNamespace(
        chromium=SimpleNamespace(executable_path=str(tmp_path / "chrome"), launch=lambda **kw: launched.append(kw))
    )
    with pytest.raises(pytest.fail.Exception, match="No Chromium for the browser tests"):
        launch_chromium(playwright)
    assert launched == []
    # The negative control: with a browser to find, the same call launches it.
    monkeypatch.setenv("ICEWATER_CHROMIUM", executable(tmp_path / "chromium"))
    launch_chromium(playwright)
    assert launched == [{"executable_path": str(tmp_path / "chromium"), "args": launched[0]["args"], "headless": True}]
