"""python manage.py gate --eval-set NAME --rubric NAME@VERSION --judge NAME [--agent-version V]
[--min-pass-rate 0.9] [--max-error-rate 0.02] [--confidence 0.95] --format json|text

Exit 0 passed, 1 failed, 2 cannot decide. Every decision is stored (the gate results page shows them).
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from calibration.gate import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MIN_PASS_RATE,
    GateRequest,
    GateThresholds,
    gate_and_record,
    render_text,
)
from calibration.models import GateResult


class Command(BaseCommand):
    help = "The release gate on judge verdicts: Wilson lower bound per gating criterion plus a maximum ERROR rate."

    def add_arguments(self, parser):
        parser.add_argument("--eval-set", required=True, help="the release candidate's eval set")
        parser.add_argument("--rubric", required=True, help="NAME@VERSION")
        parser.add_argument("--judge", required=True, help="judge config name")
        parser.add_argument("--agent-version", help="gate only the outputs of this agent version")
        parser.add_argument("--min-pass-rate", type=float, default=DEFAULT_MIN_PASS_RATE)
        parser.add_argument("--max-error-rate", type=float, default=DEFAULT_MAX_ERROR_RATE)
        parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE)
        parser.add_argument("--format", choices=["json", "text"], default="text")

    def handle(self, *args, **opts):
        try:
            thresholds = GateThresholds(opts["min_pass_rate"], opts["max_error_rate"], opts["confidence"])
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2)
        request = GateRequest(opts["eval_set"], opts["rubric"], opts["judge"], opts["agent_version"], thresholds)
        outcome = gate_and_record(request, source=GateResult.Source.CLI)
        if outcome.decision is None:
            # Nothing to print on stdout: CI reads the exit code, people read the reason.
            self.stderr.write(f"cannot decide: {outcome.reason}")
        elif opts["format"] == "json":
            self.stdout.write(json.dumps(outcome.decision.as_dict(), indent=2))
        else:
            self.stdout.write(render_text(outcome))
        if outcome.exit_code:
            sys.exit(outcome.exit_code)
