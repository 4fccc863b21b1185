"""Every setting an operator can give (an ICEWATER_ variable config/settings.py reads) is named in the README or
in docs/: a setting nobody can find is one nobody sets."""

from __future__ import annotations

import re

from tests.services import ROOT

# Read by the test command only, never by a deployment.
NOT_AN_OPERATORS = {"ICEWATER_TEST_DB_NAME"}


def documented(name: str, text: str) -> bool:
    """Named whole, or as a family the docs spell once (`ICEWATER_EMAIL_*` for ICEWATER_EMAIL_PORT)."""
    family = name.rpartition("_")[0]
    return name in text or f"`{family}_*`" in text


def test_every_setting_read_at_start_up_is_named_where_an_operator_looks():
    settings_source = (ROOT / "config" / "settings.py").read_text()
    names = set(re.findall(r'"(ICEWATER_[A-Z0-9_]+)"', settings_source)) - NOT_AN_OPERATORS
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    assert len(names) > 40  # the reading above found the settings
    assert [name for name in sorted(names) if not documented(name, text)] == []
    assert not documented("ICEWATER_NOT_A_SETTING", text)  # negative control
