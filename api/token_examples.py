"""The commands shown with a new token, once: ready to paste, with this server's address and, where they are
known, real names (docs/api.md has the same calls).

The eval set is the token's pattern when it has no wildcard, else the newest eval set that matches it; the
judge is the one that gates the token's rubric version, else the newest that judged it. What is not known
stays a placeholder in capitals (EVAL_SET, JUDGE).
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from dataclasses import dataclass
from urllib.parse import urlencode

from calibration.models import GatingMark
from evals.models import EvalSet
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
    eval_set = example_eval_set(token.eval_set_pattern)
    rubric = token.rubric_version.ref
    judge = example_judge(token)
    auth = f"-H {shlex.quote('Authorization: Bearer ' + secret)}"
    ask = shlex.quote(json.dumps({"eval_set": eval_set, "rubric": rubric, "judge": judge}, ensure_ascii=False))
    report_url = shlex.quote(
        f"{base_url}/api/calibration-report?{urlencode({'eval_set': eval_set, 'rubric': rubric, 'judge': judge})}"
    )
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
        TokenScope.GUIDANCE: ("Read the judge's guidance:", f"curl {guidance_url} \\\n  {auth}"),
    }
    order = [TokenScope.PUSH, TokenScope.JUDGE, TokenScope.REPORT, TokenScope.GATE, TokenScope.GUIDANCE]
    return [Example(str(scope), *commands[scope]) for scope in order if scope in token.scopes]


def example_eval_set(pattern: str) -> str:
    if not any(char in pattern for char in "*?["):
        return pattern
    names = EvalSet.objects.order_by("-created_at", "-pk").values_list("name", flat=True)[:_EVAL_SETS_TRIED]
    return next((name for name in names if fnmatch.fnmatchcase(name, pattern)), "EVAL_SET")


def example_judge(token: GateToken) -> str:
    marks = GatingMark.objects.active().filter(rubric_version=token.rubric_version).select_related("judge_config")
    mark = marks.order_by("-pk").first()
    if mark is not None:
        return mark.judge_config.name
    runs = JudgeRun.objects.filter(rubric_version=token.rubric_version, probe_run__isnull=True)
    run = runs.select_related("judge_config").order_by("-created_at", "-pk").first()
    return run.judge_config.name if run is not None else "JUDGE"
