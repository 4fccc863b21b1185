"""python manage.py gate --eval-set NAME --rubric NAME@VERSION --judge NAME [--agent-version V]
[--min-pass-rate R] [--max-error-rate R] [--confidence C] --format json|text

Each gating criterion is held to the policy the lead stored with its mark; the three flags may only
tighten it (a looser value is refused, exit 2, nothing stored). Exit 0 passed, 1 failed, 2 cannot decide
(with --format json the same {"passed": null, "error": ...} as the HTTP API; where the candidate's own gold holds
the gate back, the criteria come with it). Every decision is stored
(the gate results page shows them).
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from calibration.gate.answers import render_text, undecided_dict
from calibration.gate.release_gate import gate_and_record
from calibration.gate.request import EXIT_UNDECIDED, GateRequest
from calibration.models import GateResult
from calibration.stats.policy import PolicyRefused, Tightening
from evals.workspace_option import add_workspace_argument, chosen_workspace

TIGHTEN = "only tightens the lead's policy of each gating criterion (default: the lead's)"


class Command(BaseCommand):
    help = "The release gate on judge verdicts: Wilson lower bound per gating criterion plus a maximum ERROR rate."

    def add_arguments(self, parser):
        parser.add_argument("--eval-set", required=True, help="the release candidate's eval set")
        parser.add_argument("--rubric", required=True, help="NAME@VERSION")
        parser.add_argument("--judge", required=True, help="judge config name")
        parser.add_argument("--agent-version", help="gate only the outputs of this agent version")
        parser.add_argument("--min-pass-rate", type=float, help=f"a higher minimum pass rate; {TIGHTEN}")
        parser.add_argument("--max-error-rate", type=float, help=f"a lower maximum ERROR rate; {TIGHTEN}")
        parser.add_argument("--confidence", type=float, help=f"a higher confidence; {TIGHTEN}")
        parser.add_argument("--format", choices=["json", "text"], default="text")
        add_workspace_argument(parser)

    def handle(self, *args, **opts):
        try:
            tightening = Tightening(opts["min_pass_rate"], opts["max_error_rate"], opts["confidence"])
        except ValueError as exc:
            raise CommandError(str(exc), returncode=EXIT_UNDECIDED)
        try:
            workspace = chosen_workspace(opts["workspace"])
        except CommandError as exc:  # exit 1 would read as a failed gate in CI: it is "cannot decide"
            raise CommandError(str(exc), returncode=EXIT_UNDECIDED) from None
        request = GateRequest(opts["eval_set"], opts["rubric"], opts["judge"], opts["agent_version"], tightening)
        try:
            outcome = gate_and_record(request, workspace=workspace, source=GateResult.Source.CLI)
        except PolicyRefused as exc:
            raise CommandError(str(exc), returncode=EXIT_UNDECIDED)
        if outcome.decision is None or outcome.decision.undecided:
            # People read this (CI reads the exit code); the reason's own "undecided: " would say it twice.
            self.stderr.write(f"cannot decide: {outcome.reason.removeprefix('undecided: ')}")
        if outcome.decision is None:
            if opts["format"] == "json":
                self.stdout.write(json.dumps(undecided_dict(outcome.reason), indent=2))
        elif opts["format"] == "json":
            self.stdout.write(json.dumps(outcome.decision.as_dict(), indent=2))
        else:
            self.stdout.write(render_text(outcome))
        if outcome.exit_code:
            sys.exit(outcome.exit_code)
