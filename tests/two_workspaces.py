"""Two workspaces with objects of the same names, for the isolation tests of the pages (issue #36).

Each side has a lead, a reviewer and an annotator, an eval set and a rubric of the same names as the other
side's, outputs, an open queue, an annotator's draft, two disagreeing submitted annotations (so adjudication
waits), a judge config of the same name with a finished run and a verdict, a probe run and an import job.
`same_as_missing` is the rule every page of one workspace keeps for the other's ids: the answer to another
workspace's id is exactly the answer to an id that does not exist (status and body).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.test import Client

from evals.models import EvalSet, Output, Role, RubricVersion, User, Workspace
from formats.models import ImportJob
from judging.models import JudgeConfig, JudgeRun, ProbeRun, Verdict
from labeling.models import Annotation, LabelingQueue
from tests import factories as f

EVAL_SET = "refund-support"
RUBRIC = "refund-support"
JUDGE = "support-judge"
# An id no row has: the answer every page gives to another workspace's id must be this one's.
MISSING = 987_654_321


@dataclass
class Side:
    workspace: Workspace
    lead: User
    reviewer: User
    annotator: User
    eval_set: EvalSet
    rubric_version: RubricVersion
    outputs: list[Output]
    queue: LabelingQueue
    draft: Annotation  # the annotator's, in the first output
    judge: JudgeConfig
    run: JudgeRun
    verdict: Verdict
    probe_run: ProbeRun
    import_job: ImportJob


def build_side(slug: str) -> Side:
    workspace = f.make_workspace(slug, name=f"Team {slug}")
    lead = f.make_user(f"{slug}-lead", Role.LEAD, workspace=workspace)
    reviewer = f.make_user(f"{slug}-reviewer", Role.REVIEWER, workspace=workspace)
    annotator = f.make_user(f"{slug}-annotator", Role.ANNOTATOR, workspace=workspace)
    eval_set = f.make_eval_set(EVAL_SET, workspace=workspace)
    rv = f.make_rubric_version(RUBRIC, workspace=workspace)
    outputs = [f.make_output(eval_set, case_id=f"case-{i}", response=f"{slug} answer {i}") for i in range(3)]
    queue = LabelingQueue.objects.create(eval_set=eval_set, rubric_version=rv, opened_by=lead)
    draft = f.annotate_directly(outputs[0], rv, annotator, f.all_answers(rv), submit=False)
    # Two people disagree on outputs[1]: an adjudication waits for the reviewer and the lead.
    first, second = (f.make_user(f"{slug}-labeler-{i}", Role.ANNOTATOR, workspace=workspace) for i in (1, 2))
    f.annotate_directly(outputs[1], rv, first, f.all_answers(rv, "PASS"))
    f.annotate_directly(outputs[1], rv, second, f.all_answers(rv, "FAIL"))
    judge = f.make_judge(JUDGE, workspace=workspace)
    run = f.make_run(eval_set, rv, judge)
    verdict = f.add_verdict(run, outputs[1], "correct_amount", "PASS")
    probe_run = ProbeRun.objects.create(
        eval_set=eval_set, rubric_version=rv, judge_config=judge, plan=[], outputs=1, started_by=lead
    )
    job = ImportJob.objects.create(
        workspace=workspace, kind="cases", file_name=f"{slug}.jsonl", size=1, options={}, created_by=lead
    )
    return Side(
        workspace, lead, reviewer, annotator, eval_set, rv, outputs, queue, draft, judge, run, verdict, probe_run, job
    )


def signed_in(user: User, workspace: Workspace) -> Client:
    """A client of `user` working in `workspace` (the switcher's choice, kept in the session)."""
    client = Client()
    client.force_login(user)
    session = client.session
    session["icewater_workspace"] = workspace.slug
    session.save()
    return client


_TOKENS = re.compile(rb'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')


def _body(content: bytes) -> bytes:
    """A page's body without its CSRF tokens (masked afresh on every render)."""
    return _TOKENS.sub(rb"\1", content)


def answer(client: Client, method: str, url: str, data: dict | None = None, htmx: bool = False) -> tuple[int, bytes]:
    headers = {"HX-Request": "true"} if htmx else {}
    response = getattr(client, method)(url, data or {}, headers=headers)
    return response.status_code, _body(response.content)


def same_as_missing(
    client: Client, method: str, other: str, missing: str, data: dict | None = None, htmx: bool = False
) -> tuple[int, bytes]:
    """The answer to `other` (an address with another workspace's id), asserted equal to `missing`'s."""
    got, expected = answer(client, method, other, data, htmx), answer(client, method, missing, data, htmx)
    assert got == expected, f"{method.upper()} {other}: {got[0]}, but {missing}: {expected[0]}"
    return got


def options(body: bytes | str, name: str) -> set[str]:
    """The values of the <select name=`name`> of a page (ids of different tables can be equal: look in one)."""
    text = body.decode() if isinstance(body, bytes) else body
    found = re.search(rf'<select[^>]*name="{name}"[^>]*>(.*?)</select>', text, re.S)
    assert found, f"no select {name}"
    return set(re.findall(r'<option value="([^"]*)"', found.group(1)))
