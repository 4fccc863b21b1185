"""Plain helpers for the browser tests: which Chromium to drive, how to launch it, screenshots.

Chromium is found, not assumed at one path: ICEWATER_CHROMIUM if set, else the first of chromium,
chromium-browser and google-chrome on PATH (Debian's package is `chromium`), else the browser
`playwright install chromium` downloaded. Finding none is an error that says how to install one: a
browser test never skips, so a machine without a browser cannot pass the suite by accident.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

ENV_VAR = "ICEWATER_CHROMIUM"
ON_PATH = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SCREENS = Path(os.environ.get("ICEWATER_SCREENS_DIR", "/tmp/screens"))


class ChromiumNotFound(RuntimeError):
    pass


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_chromium(
    playwright_path: str | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    which: Callable[[str], str | None] = shutil.which,
) -> str:
    """The Chromium executable to launch. `playwright_path` is where Playwright keeps its own download
    (`playwright.chromium.executable_path`), tried last; `environ` and `which` are seams for the tests."""
    named = environ.get(ENV_VAR, "")
    if named:
        # A path the person chose is used or refused, never silently replaced by another browser.
        if not _is_executable(named):
            raise ChromiumNotFound(f"{ENV_VAR}={named} is not an executable file: point it at a Chromium binary.")
        return named
    for name in ON_PATH:
        found = which(name)
        if found:
            return found
    if playwright_path and _is_executable(playwright_path):
        return playwright_path
    raise ChromiumNotFound(
        "No Chromium for the browser tests: looked for "
        f"${ENV_VAR}, {', '.join(ON_PATH)} on PATH and Playwright's own ({playwright_path or 'none'}). "
        "Install one with `sudo apt-get install chromium` (Debian; `make test` does it) or "
        "`.venv/bin/python -m playwright install chromium`, or set "
        f"{ENV_VAR} to a Chromium binary. (`make test-fast` needs no browser.)"
    )


def launch_chromium(playwright):
    """Headless Chromium from a running `sync_playwright()`; a clear failure (not a skip) when there is none."""
    import pytest

    try:
        path = find_chromium(playwright.chromium.executable_path)
    except ChromiumNotFound as missing:
        pytest.fail(str(missing), pytrace=False)
    return playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)


def screenshot(page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=False)
