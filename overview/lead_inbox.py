"""What waits for a lead's decision, for Home: each line says what, and links to the page where it is decided.

Seven kinds, in the order they appear:

  draft          a rubric version still a draft (approve it, or replace it)         -> the rubric version's page
  no_queue       an eval set nobody is labeling (open a queue if people should)     -> Queues
  uncalibrated   a finished judge run on a labeled eval set with no gating decision -> its calibration report
                 (a mark, a revocation, or "gating stays as it is": a GatingReview)
                 made since it finished; not a run of a judge config audited on that
                 eval set (a release candidate: its audit plan is the decision)
  tier_changed   a gating criterion whose tier on a fresh report differs from the   -> its report row
                 tier it was marked in
  stale          a gating mark that no longer applies or soon will not: the judge   -> the report it was made on
                 config's or rubric version's contents changed, the rubric version
                 is no longer approved, or a newer version of the rubric exists
  audit_decided  an open audit plan that has decided (PASS or FAIL: close it), or a   -> the plan's page
                 plan closed in the last RECENT_GATES days, with its decision (the kept
                 one, with any gold changed since and what today's gold reads)
  audit_waiting  an open audit plan not yet decided: labeled n of about how many the  -> the plan's page
                 forecast needs, and whether released outputs wait for labels or the
                 lead must release more
  gate_failed    a gate that failed or could not decide in the last RECENT_GATES    -> the gate result
                 days (identical ones as one line, with how many times)
  gate_misnamed  a gate call in those days that named an eval set, rubric version   -> the gate result
                 or judge config that does not exist: the caller's mistake, not a
                 release's failure

The reviewer's part is overview.review_inbox. Queries: one per kind (the two gate kinds share one, and so do
the two audit kinds), plus one report (six queries, nine with a probe run) per calibration a gating mark was
made on, at most MAX_TIER_CHECKS of them, and one plan's figures (six queries) per audit plan shown, at most
MAX_AUDIT_CHECKS of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Exists, F, OuterRef, Q, Subquery
from django.urls import reverse
from django.utils import timezone

from calibration.audits.figures import AuditFigures
from calibration.audits.stored_figures import stored_figures
from calibration.data.holdout import held_out_split
from calibration.models import AuditPlan, GateResult, GatingMark, GatingReview
from calibration.report.compose import criterion_tiers
from calibration.report.stored_report import shown_report, stored_row
from evals.models import EvalSet, RubricVersion, Workspace
from evals.workspaces import in_workspace
from judging.models import JudgeRun
from labeling.models import Annotation, LabelingQueue

# Gate answers older than a week are history, not news: a release pipeline runs the gate daily or more.
RECENT_GATES = timedelta(days=7)
# Lines per kind on Home; the rest is counted ("and 12 more") and one click away.
MAX_LINES = 8
# Each check of a gating mark's tier is one full report; a lead gates a handful of instruments.
MAX_TIER_CHECKS = 5
# Each audit plan's figures are read when shown (six queries and a Monte Carlo forecast, about 0.2 s on the demo's
# 150 outputs); a lead audits a gating criterion or two per release candidate. Plans past these are listed
# without figures, one click from them.
MAX_AUDIT_CHECKS = 4


@dataclass(frozen=True)
class Line:
    text: str
    url: str
    action: str
    when: datetime | None = None


@dataclass(frozen=True)
class Section:
    kind: str
    title: str
    lines: list[Line]
    more: int = 0


def _section(kind: str, title: str, lines: list[Line]) -> Section | None:
    if not lines:
        return None
    return Section(kind, title, lines[:MAX_LINES], max(len(lines) - MAX_LINES, 0))


def _report_url(eval_set_id: int, rubric_version_id: int, judge_id: int, anchor: str = "") -> str:
    url = reverse("calibration:report", args=[eval_set_id, rubric_version_id, judge_id])
    return f"{url}#{anchor}" if anchor else url


def drafts(workspace: Workspace) -> list[Line]:
    versions = in_workspace(RubricVersion, workspace).filter(status=RubricVersion.Status.DRAFT).select_related("rubric")
    return [
        Line(
            f"{rv.ref} is a draft: no criterion of it can gate",
            reverse("labeling:rubric_version", args=[rv.pk]),  # its diff, its approval, its queue button
            "Approve or replace",
            rv.created_at,
        )
        for rv in versions.order_by("created_at")
    ]


def eval_sets_without_queue(workspace: Workspace) -> list[Line]:
    # A release candidate is judged and gated, never labeled: an eval set the gate has been asked about is one.
    candidates = GateResult.objects.filter(eval_set=OuterRef("pk"))
    queued = LabelingQueue.objects.current().values("eval_set_id")
    sets = in_workspace(EvalSet, workspace).exclude(pk__in=queued).exclude(Exists(candidates)).order_by("name")
    queues = reverse("labeling:queues")
    return [
        Line(f"{es.name} has no open labeling queue", f"{queues}#queue-{es.pk}", "Open a queue", es.created_at)
        for es in sets
    ]


def uncalibrated_runs(workspace: Workspace) -> list[Line]:
    labeled = Annotation.objects.submitted().filter(
        output__case__eval_set=OuterRef("eval_set"), rubric_version=OuterRef("rubric_version")
    )
    decided = GatingMark.objects.filter(
        rubric_version=OuterRef("rubric_version"),
        judge_config=OuterRef("judge_config"),
        calibration_eval_set=OuterRef("eval_set"),
    ).filter(Q(marked_at__gte=OuterRef("finished_at")) | Q(revoked_at__gte=OuterRef("finished_at")))
    reviewed = GatingReview.objects.filter(
        rubric_version=OuterRef("rubric_version"),
        judge_config=OuterRef("judge_config"),
        calibration_eval_set=OuterRef("eval_set"),
        decided_at__gte=OuterRef("finished_at"),
    )
    # A release candidate under audit is labeled for its audit plan, not to calibrate on: the plan is its decision.
    audited = AuditPlan.objects.filter(eval_set=OuterRef("eval_set"), judge_config=OuterRef("judge_config"))
    runs = (
        in_workspace(JudgeRun, workspace)
        .filter(status=JudgeRun.Status.DONE, probe_run__isnull=True)  # probe arms calibrate nothing
        # The first labeled output, not EXISTS: PostgreSQL turns an EXISTS into a hash join over every submitted
        # annotation (hundreds of ms on a 100,000-output set, issue 37), a LIMIT 1 subquery stops at the first.
        .annotate(first_labeled=Subquery(labeled.values("pk")[:1]))
        .filter(first_labeled__isnull=False)
        .exclude(Exists(decided))
        .exclude(Exists(reviewed))
        .exclude(Exists(audited))
        .select_related("eval_set", "rubric_version__rubric", "judge_config")
        .order_by(F("finished_at").desc(nulls_last=True), "-pk")
    )
    lines, seen = [], set()
    for run in runs[: MAX_LINES * 4]:  # newest run per instrument: older runs of it are the same decision
        key = (run.eval_set_id, run.rubric_version_id, run.judge_config_id)
        if key in seen:
            continue
        seen.add(key)
        text = (
            f"run #{run.pk} of {run.judge_config.name} on {run.rubric_version.ref} over {run.eval_set.name} "
            "finished: no gating decision since"
        )
        lines.append(Line(text, _report_url(*key), "Read the calibration", run.finished_at))
    return lines


def _active_marks(workspace: Workspace):
    return in_workspace(GatingMark.objects.active(), workspace).select_related(
        "criterion", "rubric_version__rubric", "judge_config", "calibration_eval_set"
    )


def tier_changes(marks: list[GatingMark]) -> list[Line]:
    groups: dict[tuple, list[GatingMark]] = {}
    for m in marks:
        key = (m.calibration_eval_set_id, m.rubric_version_id, m.judge_config_id, m.calibration_agent_version)
        groups.setdefault(key, []).append(m)
    lines = []
    for (_, _, _, agent_version), group in list(groups.items())[:MAX_TIER_CHECKS]:
        first = group[0]
        if held_out_split(
            eval_set=first.calibration_eval_set, rubric_version=first.rubric_version, judge_config=first.judge_config
        ):
            continue  # a held-out split's tier is one of its figures: read only on a counted look (issue 41 item 3)
        tiers = _tiers(first, agent_version or None)
        for m in group:
            now = tiers.get(m.criterion.key)
            if now is not None and now != m.tier:
                text = (
                    f"{m.criterion.key} gates with {m.judge_config.name} on {m.rubric_version.ref}: marked in the "
                    f"{m.tier} tier, now {now} on {m.calibration_eval_set.name}"
                )
                url = _report_url(
                    m.calibration_eval_set_id, m.rubric_version_id, m.judge_config_id, f"criterion-{m.criterion.key}"
                )
                lines.append(Line(text, url, "Review the mark", m.marked_at))
    return lines


def _tiers(mark: GatingMark, agent_version: str | None) -> dict[str, str]:
    """Each criterion's tier on the mark's calibration now: computed, or on a large eval set the tiers of the rows a
    worker stored (none before its first computation: no line rather than a guess)."""
    es, rv, jc = mark.calibration_eval_set, mark.rubric_version, mark.judge_config
    if stored_row(es, rv, jc, agent_version) is None:
        return criterion_tiers(eval_set=es, rubric_version=rv, judge_config=jc, agent_version=agent_version)
    shown = shown_report(eval_set=es, rubric_version=rv, judge_config=jc, agent_version=agent_version)
    return {r.criterion: r.tier for r in shown.report.rows} if shown.report else {}


def stale_marks(marks: list[GatingMark]) -> list[Line]:
    newer = _newest_versions({m.rubric_version.rubric_id for m in marks})
    lines = []
    for m in marks:
        rv, jc = m.rubric_version, m.judge_config
        why = ""
        if m.judge_config_hash != jc.content_hash:
            why = f"judge config {jc.name} changed since it was marked"
        elif m.rubric_content_hash != rv.content_hash:
            why = f"{rv.ref} changed since it was marked"
        elif rv.status != RubricVersion.Status.APPROVED:
            why = f"{rv.ref} is {rv.get_status_display().lower()}, so it gates nothing"
        elif (latest := newer.get(rv.rubric_id)) is not None and latest.pk != rv.pk:
            why = f"{latest.ref} is newer: calibrate it before it replaces {rv.ref}"
        if why:
            text = f"{m.criterion.key} gates with {jc.name} on {rv.ref}, but {why}"
            url = _report_url(m.calibration_eval_set_id, rv.pk, jc.pk, f"criterion-{m.criterion.key}")
            lines.append(Line(text, url, "Review the mark", m.marked_at))
    return lines


def _newest_versions(rubric_ids: set[int]) -> dict[int, RubricVersion]:
    newest: dict[int, RubricVersion] = {}
    for rv in RubricVersion.objects.filter(rubric_id__in=rubric_ids).select_related("rubric").order_by("created_at"):
        newest[rv.rubric_id] = rv  # the last one wins: the newest
    return newest


def gate_problems(workspace: Workspace, now: datetime | None = None) -> tuple[list[Line], list[Line]]:
    """(failures, calls naming the unknown) among the gates of the last RECENT_GATES days, newest first; one query.

    A gate that failed or could not decide on an instrument that exists is a release's news; a call naming an
    eval set, rubric version or judge config that does not exist (a misspelled name in a CI job) is the
    caller's mistake, listed apart. Identical answers to identical asks (a pipeline retrying) are one line
    that says how often, linking to the newest.
    """
    since = (now or timezone.now()) - RECENT_GATES
    results = (
        in_workspace(GateResult, workspace)
        .filter(created_at__gte=since, decision__in=[GateResult.Decision.FAILED, GateResult.Decision.UNDECIDED])
        .select_related("token")
    )
    failures: dict[tuple, list[GateResult]] = {}
    mistakes: dict[tuple, list[GateResult]] = {}
    for g in results.order_by("-created_at", "-pk"):
        if _names_unknown(g):
            mistakes.setdefault((g.reason, g.source, g.token_id), []).append(g)
        else:
            ask = (g.decision, g.rubric_ref, g.judge_name, g.eval_set_name, g.agent_version)
            failures.setdefault((*ask, g.binding_criterion, g.reason), []).append(g)
    return [_failure_line(same) for same in failures.values()], [_mistake_line(same) for same in mistakes.values()]


def _names_unknown(g: GateResult) -> bool:
    # The gate resolves the eval set, then the rubric version, then the judge config, and records what it found.
    return g.decision == GateResult.Decision.UNDECIDED and None in (
        g.eval_set_id,
        g.rubric_version_id,
        g.judge_config_id,
    )


def _times(same: list[GateResult]) -> str:
    return f" ({len(same)} times)" if len(same) > 1 else ""


def _failure_line(same: list[GateResult]) -> Line:
    g = same[0]  # the newest
    versions = f"agent version {g.agent_version}" if g.agent_version else "all agent versions"
    what = f"{g.rubric_ref} with {g.judge_name} on {g.eval_set_name}, {versions}"
    if g.decision == GateResult.Decision.FAILED:
        text = f"the gate failed {what}" + (f" (binding: {g.binding_criterion})" if g.binding_criterion else "")
    else:
        text = f"the gate could not decide {what}: {g.undecided_because}"
    return Line(text + _times(same), reverse("calibration:gate_result", args=[g.pk]), "Read the result", g.created_at)


def _mistake_line(same: list[GateResult]) -> Line:
    g = same[0]
    who = f"token {g.token.project}" if g.token else g.get_source_display().lower()
    text = f"a gate call from {who} named what does not exist: {g.reason}{_times(same)}"
    return Line(text, reverse("calibration:gate_result", args=[g.pk]), "Read the call", g.created_at)


def audit_plans(workspace: Workspace, now: datetime | None = None) -> tuple[list[Line], list[Line]]:
    """(decided or closed lately, waiting for labels) among the open audit plans and those closed in the last
    RECENT_GATES days; one query, and each plan's figures for the first MAX_AUDIT_CHECKS (open ones first).

    Decided is news until the lead closes the plan (the page then no longer asks for its labels); a plan closed
    this week says what it had decided. An undecided plan says how far its labels are and what it waits for:
    annotators (released outputs not labeled yet) or the lead (everything released is labeled: release more).
    """
    since = (now or timezone.now()) - RECENT_GATES
    recent = AuditPlan.objects.filter(Q(closed_at__isnull=True) | Q(closed_at__gte=since)).for_figures()
    plans = in_workspace(recent, workspace).order_by(F("closed_at").desc(nulls_first=True), "-created_at", "-id")
    decided: list[Line] = []
    waiting: list[Line] = []
    listed = list(plans)
    # The figures a worker stored (issue 37): one query for the plans checked, none computed here.
    stored = stored_figures(listed[:MAX_AUDIT_CHECKS])
    for i, plan in enumerate(listed):
        url = reverse("calibration:audit_plan", args=[plan.pk])
        what = _audit_words(plan)
        if i >= MAX_AUDIT_CHECKS:
            state = "closed" if plan.closed_at else "open"
            line = Line(f"{what}: {state}; its figures are on its page", url, "Open the plan", plan.created_at)
            (decided if plan.closed_at else waiting).append(line)
            continue
        f = stored[plan.pk].figures
        if f is None:
            line = Line(f"{what}: figures {stored[plan.pk].words()}", url, "Open the plan", plan.created_at)
            (decided if plan.closed_at else waiting).append(line)
            continue
        if plan.closed_at is not None:
            outcome = f"{f.decided} at label {f.decided_at} of {f.N}" if f.decided else "undecided"
            text = f"{what} was closed: {outcome} ({f.n_labeled} labeled of {f.N}){_gold_since(f)}"
            decided.append(Line(text, url, "Read the plan", plan.closed_at))
        elif f.kept and f.kept.differs:
            text = f"{what} {f.kept.words}: the gate does not decide on it until the changed gold is reviewed"
            decided.append(Line(text, url, "Review the gold, close the plan", f.kept.decided_at))
        elif f.decided:
            text = f"{what} decided {f.decided} at label {f.decided_at} of {f.N}{_gold_since(f)}: its labels are no "
            text += "longer needed"
            decided.append(Line(text, url, "Read the decision, close the plan", f.kept.decided_at if f.kept else None))
        else:
            waiting.append(_waiting_line(what, f, url, plan.created_at))
    return decided, waiting


def _gold_since(f: AuditFigures) -> str:
    """What changed in the gold since the plan's decision was kept, if anything (audit_kept.py)."""
    if f.kept is None or not (f.kept.gold_changed or f.kept.differs):
        return ""
    return f"; {f.kept.since}"


def _audit_words(plan: AuditPlan) -> str:
    agent = f" ({plan.agent_version})" if plan.agent_version else ""
    return f"the audit of {plan.criterion.key} on {plan.eval_set.name}{agent} with {plan.judge_config.name}"


def _waiting_line(what: str, f: AuditFigures, url: str, when: datetime) -> Line:
    # "Needed" is the forecast's: labeled so far plus the expected labels to a decision, never past N.
    needed = min(f.n_labeled + f.expected_more_labels, f.N)
    text = f"{what}: {f.n_labeled} labeled of about {needed} needed by the forecast ({f.N} outputs)"
    if f.n_awaiting_gold:
        text += f", {f.n_awaiting_gold} awaiting gold"
    if f.n_gold_cant_tell:
        text += f", {f.n_gold_cant_tell} with gold Can't tell"
    unlabeled = f.released - f.n_labeled
    if unlabeled > 0:
        return Line(f"{text}; {unlabeled} released wait for annotators", url, "Follow the audit", when)
    if f.released < f.N:  # the annotators have caught up: only the lead can give them more
        return Line(f"{text}; every released output is labeled", url, "Label these next", when)
    return Line(f"{text}; every output is labeled", url, "Follow the audit", when)


def lead_inbox(workspace: Workspace) -> list[Section]:
    """What waits for a lead of `workspace`: nothing of another workspace is read or counted."""
    marks = list(_active_marks(workspace))
    failures, mistakes = gate_problems(workspace)
    audits_decided, audits_waiting = audit_plans(workspace)
    sections = [
        _section("draft", "Draft rubric versions", drafts(workspace)),
        _section("no_queue", "Eval sets nobody is labeling", eval_sets_without_queue(workspace)),
        _section("uncalibrated", "Finished judge runs not yet decided on", uncalibrated_runs(workspace)),
        _section("tier_changed", "Gating criteria whose tier changed", tier_changes(marks)),
        _section("stale", "Gating marks gone stale", stale_marks(marks)),
        _section("audit_decided", "Audit plans decided or closed this week", audits_decided),
        _section("audit_waiting", "Audit plans waiting for labels", audits_waiting),
        _section("gate_failed", "Recent gate failures", failures),
        _section("gate_misnamed", "Gate calls that named something unknown", mistakes),
    ]
    return [s for s in sections if s is not None]
