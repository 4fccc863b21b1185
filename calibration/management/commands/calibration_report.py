"""python manage.py calibration_report --eval-set NAME --rubric NAME@VERSION --judge NAME
[--agent-version V] [--by agent_version] --format json|csv|text"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from calibration.report.compose import CalibrationReport, SegmentedReport, calibration_report, segmented_report
from calibration.report.files import to_csv, to_json, to_text
from calibration.workbench.holdout_looks import count_report_look
from evals.lookup import eval_set_named
from evals.models import RubricVersion
from evals.validators import UnknownName
from evals.workspace_option import add_workspace_argument, chosen_workspace
from judging.judge_lookup import judge_named

RENDER = {"json": to_json, "csv": to_csv, "text": to_text}


class Command(BaseCommand):
    help = "Per criterion: Cohen's kappa of a judge config against gold, beside the human ceiling."

    def add_arguments(self, parser):
        parser.add_argument("--eval-set", required=True, help="the calibration eval set (labeled by people)")
        parser.add_argument("--rubric", required=True, help="NAME@VERSION")
        parser.add_argument("--judge", required=True, help="judge config name")
        parser.add_argument("--agent-version", help="only the outputs of this agent version")
        parser.add_argument("--by", choices=["agent_version"], help="one report per agent version")
        parser.add_argument("--format", choices=sorted(RENDER), default="text")
        add_workspace_argument(parser)

    def handle(self, *args, **opts):
        if opts["by"] and opts["agent_version"]:
            raise CommandError("--by agent_version and --agent-version exclude each other: pick one", returncode=2)
        workspace = chosen_workspace(opts["workspace"])
        try:
            eval_set = eval_set_named(opts["eval_set"], workspace)
            rubric_version = RubricVersion.objects.by_ref(opts["rubric"], workspace)
            judge_config = judge_named(opts["judge"], workspace)
        except UnknownName as exc:
            raise CommandError(str(exc), returncode=2)
        report: CalibrationReport | SegmentedReport
        if opts["by"]:
            report = segmented_report(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
        else:
            report = calibration_report(
                eval_set=eval_set,
                rubric_version=rubric_version,
                judge_config=judge_config,
                agent_version=opts["agent_version"],
                with_audit_plans=True,
            )
        # Held-out figures (a version with examples from this eval set) in any format: one counted look.
        count_report_look(
            eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, by=None, via="command"
        )
        self.stdout.write(RENDER[opts["format"]](report), ending="" if opts["format"] == "csv" else "\n")
