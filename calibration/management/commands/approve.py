"""python manage.py approve --rubric NAME@VERSION [--judge NAME --eval-set CALIBRATION_SET --gating KEY,KEY
[--min-pass-rate R] [--max-error-rate R] [--confidence C] [--decide-on corrected_lower|wilson_lower|audit]
[--require-clean-probes]] --by USER --reason TEXT [--override] [--agent-version V]

python manage.py approve --rubric NAME@VERSION --judge NAME --eval-set CALIBRATION_SET --keep-gating
--by USER --reason TEXT [--agent-version V]

Without --judge: approve the rubric version. With --judge, --eval-set and --gating: mark those criteria as
gating for that (approved) rubric version and judge config, on a fresh calibration report of the eval set,
with the gate policy they must meet (defaults: calibration/stats/policy.py); callers of the gate may only tighten it.
With --keep-gating instead of --gating: record that, on that calibration, gating stays as it is (nothing
gates where nothing did), which answers the finished run waiting on Home as a mark would.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from calibration.gate.approvals import ApprovalRefused, approve_rubric_version, mark_gating, record_review
from calibration.stats.policy import (
    DECIDE_ON,
    DEFAULT_CONFIDENCE,
    DEFAULT_DECIDE_ON,
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MIN_PASS_RATE,
    FIELDS,
    GateThresholds,
)
from calibration.workbench.holdout_looks import count_report_look
from evals.lookup import eval_set_named
from evals.models import RubricVersion, User
from evals.validators import UnknownName
from evals.workspace_option import add_workspace_argument, chosen_workspace
from judging.judge_lookup import judge_named


class Command(BaseCommand):
    help = "Approve a rubric version, or mark criteria as gating for a judge config (leads only)."

    def add_arguments(self, parser):
        parser.add_argument("--rubric", required=True, help="NAME@VERSION")
        parser.add_argument("--judge", help="judge config name (to mark gating criteria)")
        parser.add_argument("--eval-set", help="the calibration eval set the decision relies on")
        parser.add_argument("--agent-version", help="calibrate on this agent version's outputs only")
        parser.add_argument("--gating", help="criterion keys, comma-separated")
        parser.add_argument(
            "--keep-gating",
            action="store_true",
            help="with --judge and --eval-set: record that gating stays as it is on this calibration",
        )
        parser.add_argument("--by", required=True, help="username of the lead who decides")
        parser.add_argument("--reason", required=True, help="why, in words someone can check later")
        parser.add_argument("--override", action="store_true", help="allow criteria outside the gate tier")
        parser.add_argument(
            "--require-clean-probes",
            action="store_true",
            help="gate policy with --gating: the criteria may gate only while their newest probe run is clean",
        )
        for flag, default, what in (
            ("--min-pass-rate", DEFAULT_MIN_PASS_RATE, "the Wilson lower bound must reach"),
            ("--max-error-rate", DEFAULT_MAX_ERROR_RATE, "the ERROR rate must stay at or under"),
            ("--confidence", DEFAULT_CONFIDENCE, "of the Wilson lower bound"),
        ):
            parser.add_argument(flag, type=float, help=f"gate policy with --gating: {what} (default {default:g})")
        parser.add_argument(
            "--decide-on",
            choices=list(DECIDE_ON),
            help="gate policy with --gating: which lower bound must reach the minimum pass rate: the pass rate "
            "corrected for the judge's errors on this calibration, or the observed Wilson bound "
            f"(default {DEFAULT_DECIDE_ON})",
        )
        add_workspace_argument(parser)

    def handle(self, *args, **opts):
        workspace = chosen_workspace(opts["workspace"])
        if opts["keep_gating"] and opts["gating"]:
            raise CommandError("--keep-gating and --gating exclude each other: mark criteria, or keep gating as it is")
        decision = opts["gating"] or opts["keep_gating"]
        gating_parts = [opts["judge"], opts["eval_set"], decision]
        if any(gating_parts) and not all(gating_parts):
            raise CommandError(
                "--judge, --eval-set and --gating go together: give all three to mark gating criteria "
                "(or --keep-gating instead of --gating, to record that gating stays as it is)"
            )
        if opts["override"] and not opts["gating"]:
            raise CommandError("--override only applies to --gating")
        if opts["agent_version"] and not decision:
            raise CommandError("--agent-version only applies to --gating or --keep-gating")
        asked = {name: opts[name] for name in (*FIELDS, "decide_on") if opts[name] is not None}
        if (asked or opts["require_clean_probes"]) and not opts["gating"]:
            raise CommandError(
                "--min-pass-rate, --max-error-rate, --confidence, --decide-on and --require-clean-probes only apply "
                "to --gating"
            )
        try:
            policy = GateThresholds(**asked)
        except ValueError as exc:
            raise CommandError(str(exc))
        user = User.objects.filter(username=opts["by"]).first()
        if user is None:
            raise CommandError(f"unknown user {opts['by']!r}")
        try:
            rubric_version = RubricVersion.objects.by_ref(opts["rubric"], workspace)
            if not decision:
                rv = approve_rubric_version(rubric_version=rubric_version, by=user, reason=opts["reason"])
                self.stdout.write(f"approved {rv.ref} (by {user.username} at {rv.approved_at:%Y-%m-%d %H:%M})")
                return
            if opts["keep_gating"]:
                review = record_review(
                    rubric_version=rubric_version,
                    judge_config=judge_named(opts["judge"], workspace),
                    eval_set=eval_set_named(opts["eval_set"], workspace),
                    by=user,
                    reason=opts["reason"],
                    agent_version=opts["agent_version"],
                )
                self.stdout.write(
                    f"recorded: {review.summary} with {review.judge_config.name} on {rubric_version.ref} "
                    f"(calibration on {review.calibration_eval_set.name}, by {user.username})"
                )
                return
            judge_config = judge_named(opts["judge"], workspace)
            eval_set = eval_set_named(opts["eval_set"], workspace)
            # The mark's figures (printed below, or quoted by a refusal) are a look at a held-out split, if they
            # measure one: counted as every path that shows them is (docs/calibration.md, "Why looks are counted").
            count_report_look(
                eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, by=user, via="command"
            )
            marks = mark_gating(
                rubric_version=rubric_version,
                judge_config=judge_config,
                eval_set=eval_set,
                keys=opts["gating"].split(","),
                by=user,
                reason=opts["reason"],
                override=opts["override"],
                agent_version=opts["agent_version"],
                policy=policy,
                require_clean_probes=opts["require_clean_probes"],
            )
        except (UnknownName, ApprovalRefused) as exc:
            raise CommandError(str(exc))
        for mark in marks:
            kappa = mark.figures.get("kappa")
            note = " OVERRIDE" if mark.override else ""
            self.stdout.write(
                f"gating: {mark.criterion.key} ({mark.tier}{note}, kappa "
                f"{'undefined' if kappa is None else f'{kappa:.3f}'}, n {mark.figures.get('n')}) "
                f"with {mark.judge_config.name} on {rubric_version.ref}; policy: lower bound >= {mark.min_pass_rate:g} "
                f"at {mark.confidence:g} ({DECIDE_ON[mark.decide_on]}), ERROR rate <= {mark.max_error_rate:g}"
                + (", a clean probe run required" if mark.require_clean_probes else "")
                + f"; probes: {_probes(mark)}"
            )


def _probes(mark) -> str:
    figures = mark.probe_figures
    if not figures:
        return "no probe run"
    warnings = [w["code"] for w in (figures.get("criterion") or {}).get("warnings", [])]
    state = "clean" if figures.get("clean") else ", ".join(warnings) or "not measured"
    return f"probe run #{figures['probe_run']} {state}"
