"""The commands shown with a new token, once: ready to paste, with this server's address and, where they are
known, real names (docs/api.md has the same calls).

The eval set is the token's pattern when it has no wildcard, else the newest eval set of the token's workspace that
matches it; the judge is the one that gates the token's rubric version, else the newest that judged it, of that
workspace too (no other workspace's name is ever shown). What is not known stays a placeholder in capitals
(EVAL_SET, JUDGE).
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from dataclasses import dataclass
from urllib.parse import urlencode

from calibration.models import GatingMark
from evals.models import EvalSet
from evals.workspaces import in_workspace
from judging.models import JudgeRun

from .models import GateToken, TokenScope

# How many of the newest eval sets are tried against a wildcard pattern: enough for any real project, and
# the page stays one quick query however many eval sets there are.
_EVAL_SETS_TRIED = 200


@dataclass(frozen=True)
class Example:
    scope: str
    title: str
    command: str


def token_examples(*, token: GateToken, secret: str, base_url: str) -> list[Example]:
    """One curl command per scope of the token, in the order docs/api.md describes them."""
    eval_set = example_eval_set(token.eval_set_pattern, token.workspace_id)
    rubric = token.rubric_version.ref
    judge = example_judge(token)
    auth = f"-H {shlex.quote('Authorization: Bearer ' + secret)}"
    ask = shlex.quote(json.dumps({"eval_set": eval_set, "rubric": rubric, "judge": judge}, ensure_ascii=False))
    report_url = shlex.quote(
        f"{base_url}/api/calibration-report?{urlencode({'eval_set': eval_set, 'rubric': rubric, 'judge': judge})}"
    )
    plans_url = shlex.quote(f"{base_url}/api/audit-plans?{urlencode({'eval_set': eval_set})}")
    guidance_url = shlex.quote(f"{base_url}/api/judge-guidance?{urlencode({'judge': judge})}")
    outputs_url = shlex.quote(f"{base_url}/api/outputs?{urlencode({'eval_set': eval_set})}")
    json_body = "-H 'Content-Type: application/json'"
    commands = {
        TokenScope.GATE: (
            "Ask the release gate:",
            f"curl -X POST {base_url}/api/gate \\\n  {auth} {json_body} \\\n  -d {ask}",
        ),
        TokenScope.PUSH: (
            "Push a run's outputs (a JSON Lines file):",
            f"curl -X POST {outputs_url} \\\n  {auth} -H 'Content-Type: application/x-ndjson' \\\n"
            "  --data-binary @outputs.jsonl",
        ),
        TokenScope.JUDGE: (
            "Have the judge grade them:",
            f"curl -X POST {base_url}/api/judge-runs \\\n  {auth} {json_body} \\\n  -d {ask}",
        ),
        TokenScope.REPORT: ("Read the calibration report:", f"curl {report_url} \\\n  {auth}"),
        TokenScope.AUDIT: (
            "List the candidate's audit plans (start one: POST /api/audit-plans, docs/api.md):",
            f"curl {plans_url} \\\n  {auth}",
        ),
        TokenScope.GUIDANCE: ("Read the judge's guidance:", f"curl {guidance_url} \\\n  {auth}"),
        TokenScope.TRACES: (
            "Send an agent's OpenTelemetry traces (the exporter's environment; docs/formats.md, OpenTelemetry):",
            f"export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={shlex.quote(base_url + '/api/otlp/v1/traces')}\n"
            f"export OTEL_EXPORTER_OTLP_HEADERS={shlex.quote('Authorization=Bearer%20' + secret)}",
        ),
    }
    order = [
        TokenScope.TRACES, TokenScope.PUSH, TokenScope.JUDGE, TokenScope.REPORT, TokenScope.AUDIT, TokenScope.GATE,
        TokenScope.GUIDANCE,
    ]  # fmt: skip
    return [Example(str(scope), *commands[scope]) for scope in order if scope in token.scopes]


def example_eval_set(pattern: str, workspace_id: int) -> str:
    if not any(char in pattern for char in "*?["):
        return pattern
    newest = in_workspace(EvalSet, workspace_id).order_by("-created_at", "-pk")
    names = newest.values_list("name", flat=True)[:_EVAL_SETS_TRIED]
    return next((name for name in names if fnmatch.fnmatchcase(name, pattern)), "EVAL_SET")


def example_judge(token: GateToken) -> str:
    # The rubric version is of the token's workspace; the judge configs (and the runs' eval sets) are held to it too.
    marks = GatingMark.objects.active().filter(rubric_version=token.rubric_version)
    marks = marks.filter(judge_config__workspace_id=token.workspace_id).select_related("judge_config")
    mark = marks.order_by("-pk").first()
    if mark is not None:
        return mark.judge_config.name
    runs = in_workspace(JudgeRun, token.workspace_id).filter(
        rubric_version=token.rubric_version, probe_run__isnull=True
    )
    runs = runs.filter(judge_config__workspace_id=token.workspace_id)
    run = runs.select_related("judge_config").order_by("-created_at", "-pk").first()
    return run.judge_config.name if run is not None else "JUDGE"
