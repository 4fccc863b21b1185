"""The pure rules import without Django: calibration's reading of frames, the gold rule, the samples' majority.

docs/calibration.md says the math (metrics.py and reading.py) has no Django: a fresh Python process with no
settings imports them, and Django itself is never loaded on the way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE = (
    "calibration.report.annotator_agreement",
    "calibration.data.frame_reading",
    "calibration.stats.judge_compare",
    "calibration.stats.metrics",
    "calibration.stats.watch",
    "calibration.stats.audit_shared",  # one audit sample for every gating criterion (issue 37 item 3)
    "calibration.stats.shared_population",
    "watch.chart",  # the watch page's chart geometry: pure, like the report's
    "labeling.gold",
    "judging.sample_majority",
    # config/settings.py reads the sign-in's role map and issuer with these, before Django is set up.
    "signin.role_map",
    "signin.issuer",
)


def import_without_django(module: str) -> subprocess.CompletedProcess:
    """Import `module` in a fresh interpreter with no DJANGO_SETTINGS_MODULE; it prints whether Django loaded."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = f"import importlib, sys\nimportlib.import_module({module!r})\nprint('django' in sys.modules)"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_imports_with_django_not_configured(module):
    done = import_without_django(module)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"  # not even imported on the way


def test_a_module_that_needs_django_fails_there():
    # Negative control: the loaders read the database through the models, which need settings.
    done = import_without_django("labeling.gold_loaders")
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr or "AppRegistryNotReady" in done.stderr


def test_the_values_written_out_in_the_pure_modules_are_the_models():
    from evals.models import GoldPolicy
    from judging.models import VerdictOutcome
    from judging.sample_majority import ABSTAIN
    from labeling import gold

    assert ABSTAIN == VerdictOutcome.ABSTAIN
    assert [gold.MAJORITY, gold.ANY_FAIL, gold.UNANIMOUS] == [p.value for p in GoldPolicy]
