"""python manage.py audit_plan create --eval-set NAME --rubric NAME@VERSION --judge NAME --criterion KEY --by LEAD
[--agent-version V] [--seed N] [--min-pass-rate X] [--confidence C] [--design D] [--also-judge NAME ...]

python manage.py audit_plan create ... --criterion A --criterion B (or --gating) --by LEAD: one audit of them all

python manage.py audit_plan show PLAN [--format json|text] [-k K]
python manage.py audit_plan show --group GROUP [--format json|text]

python manage.py audit_plan next PLAN [-k K] [--by LEAD]

An audit of a release candidate (issue 22, docs/calibration.md "Audits on the candidate: the plan"). `create`
starts a plan for a gating criterion on a candidate eval set and prints its id; the candidate's labeling queue
then hands out its outputs in the plan's seeded random order. `next` releases the next k positions of that
order to the queue (default 25), in the name of the lead who started the plan unless --by names another.
`show` prints the plan's figures as a worker last computed them (issue 37), with how fresh they are: the order
(case ids), labeled n of N, the estimate, the anytime-valid interval, the decision and the forecast for the next
labels (its k is the one the worker computed, 25; -k is kept for old scripts).
Several --criterion (or --gating) start one audit of them all on one sample (issue 37 item 3: a group of plans
whose levels, PASS at alpha and FAIL at alpha / k, are fixed at the start); `show --group` prints its stored shared
decision.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from calibration.audits import group_text
from calibration.audits.figures import AuditFigures
from calibration.audits.groups import start_group
from calibration.audits.plans import AuditPlanError, release_plan_next, released_words, start_plan
from calibration.audits.stored_figures import stored_for
from calibration.models import AuditPlan, AuditPlanGroup, GatingMark
from evals.lookup import eval_set_named
from evals.models import Criterion, RubricVersion, User, Workspace
from evals.validators import UnknownName
from evals.workspace_option import add_workspace_argument, chosen_workspace
from evals.workspaces import in_workspace
from judging.judge_lookup import judge_named
from labeling.audit_order import DEFAULT_RELEASE


class Command(BaseCommand):
    help = "Start an audit plan on a release candidate, show its figures, or release its next outputs to label."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="create|show|next")
        create = actions.add_parser("create", help="start a plan; prints its id")
        create.add_argument("--eval-set", required=True, help="the release candidate's eval set")
        create.add_argument("--rubric", required=True, help="NAME@VERSION")
        create.add_argument("--judge", required=True, help="the judge config the criterion gates with")
        create.add_argument(
            "--criterion",
            action="append",
            default=[],
            help="the gating criterion's key; given more than once, one audit of them all on one sample (a group)",
        )
        create.add_argument(
            "--gating",
            action="store_true",
            help="one audit of every criterion that gates with the judge under the candidate's queue's rubric version",
        )
        create.add_argument("--by", required=True, help="username of the lead who starts it")
        create.add_argument("--agent-version", help="audit only this agent version's outputs")
        create.add_argument("--seed", type=int, help="the order's seed (default: random; kept with the order)")
        create.add_argument("--min-pass-rate", type=float, help="default and lowest: the gating mark's")
        create.add_argument("--confidence", type=float, help="default and lowest: the gating mark's")
        create.add_argument(
            "--design",
            choices=AuditPlan.Design.values,
            default=AuditPlan.Design.UNIFORM,
            help="uniform (default): a prefix of one random order; stratified: the same releases, the test counted "
            "per side of the judge's verdict (docs/calibration.md: it costs more labels on most sets)",
        )
        create.add_argument(
            "--also-judge",
            action="append",
            default=[],
            metavar="NAME",
            help="uniform only, repeatable: an extra judge config whose vote share joins the jury predictor (it needs "
            "verdicts of the criterion on the candidate; frozen at the start)",
        )
        show = actions.add_parser("show", help="the plan's figures now")
        show.add_argument("plan", nargs="?", help="the plan's id")
        show.add_argument("--group", help="instead of a plan: an audit of several criteria (its group id)")
        show.add_argument("--format", choices=["json", "text"], default="text")
        show.add_argument("-k", type=int, default=DEFAULT_RELEASE, help="forecast after this many more labels")
        release = actions.add_parser("next", help="let the queue hand out the next k outputs of the order")
        release.add_argument("plan", help="the plan's id")
        release.add_argument("-k", type=int, default=DEFAULT_RELEASE, help=f"how many (default {DEFAULT_RELEASE})")
        release.add_argument("--by", help="username of the lead (default: who started the plan)")
        for action in (create, show, release):
            add_workspace_argument(action)

    def handle(self, *args, **opts):
        workspace = chosen_workspace(opts["workspace"])
        try:
            if opts["action"] == "create":
                self._create(opts, workspace)
            elif opts["action"] == "show" and opts["group"]:
                self.stdout.write(group_text.show(_group(opts["group"], workspace), opts["format"]))
            elif opts["action"] == "show":
                _k(opts["k"])
                if not opts["plan"]:
                    raise CommandError("show names a plan (its id), or --group ID")
                stored = stored_for(_plan(opts["plan"], workspace))
                if opts["format"] == "json":
                    self.stdout.write(json.dumps(stored.as_dict(), indent=2))
                elif stored.figures is None:
                    self.stdout.write(f"audit plan {opts['plan']}: figures {stored.words()}")
                else:
                    self.stdout.write(text(stored.figures) + f"\nfigures {stored.words()}")
            else:
                plan = _plan(opts["plan"], workspace)
                by = _user(opts["by"]) if opts["by"] else plan.created_by
                release_plan_next(plan=plan, by=by, k=_k(opts["k"]))
                plan.refresh_from_db()
                self.stdout.write(f"audit plan {plan.pk} on {plan.eval_set.name}: {released_words(plan)}")
        except (UnknownName, AuditPlanError) as exc:
            raise CommandError(str(exc))

    def _create(self, opts, workspace: Workspace) -> None:
        rubric_version = RubricVersion.objects.by_ref(opts["rubric"], workspace)
        if opts["gating"] or len(opts["criterion"]) > 1:
            self._create_group(opts, workspace, rubric_version)
            return
        if not opts["criterion"]:
            raise CommandError("name the gating criterion with --criterion KEY (or --gating for every one)")
        criterion = _criterion(rubric_version, opts["criterion"][0])
        plan = start_plan(
            criterion=criterion,
            eval_set=eval_set_named(opts["eval_set"], workspace),
            judge_config=judge_named(opts["judge"], workspace),
            by=_user(opts["by"]),
            agent_version=opts["agent_version"],
            seed=opts["seed"],
            min_pass_rate=opts["min_pass_rate"],
            confidence=opts["confidence"],
            design=opts["design"],
            extra_judges=[judge_named(name, workspace) for name in opts["also_judge"]],
        )
        self.stdout.write(str(plan.pk))

    def _create_group(self, opts, workspace: Workspace, rubric_version: RubricVersion) -> None:
        if opts["min_pass_rate"] is not None or opts["confidence"] is not None:
            raise CommandError(
                "an audit of several criteria takes each gating mark's minimum and the strictest of their confidences: "
                "drop --min-pass-rate and --confidence"
            )
        eval_set = eval_set_named(opts["eval_set"], workspace)
        judge = judge_named(opts["judge"], workspace)
        if opts["gating"]:
            if opts["criterion"]:
                raise CommandError("--gating audits every gating criterion: give it without --criterion")
            marks = GatingMark.objects.for_instrument(rubric_version, judge).order_by("criterion__order")
            criteria = [m.criterion for m in marks.select_related("criterion")]
            if not criteria:
                raise CommandError(f"nothing of {rubric_version.ref} gates with judge {judge.name}")
        else:
            criteria = [_criterion(rubric_version, key) for key in opts["criterion"]]
        group = start_group(
            criteria=criteria,
            eval_set=eval_set,
            judge_config=judge,
            by=_user(opts["by"]),
            agent_version=opts["agent_version"],
            seed=opts["seed"],
            design=opts["design"],
        )
        plans = ", ".join(
            f"{p.criterion.key} plan {p.pk}"
            for p in group.plans.select_related("criterion").order_by("criterion__order", "criterion__key")
        )
        self.stdout.write(
            f"audit group {group.pk} of {group.k} criteria on {eval_set.name}: {plans}; PASS at "
            f"{group.alpha_pass:.4g}, FAIL at {group.alpha_fail:.4g} (alpha / {group.k})"
        )


def _criterion(rubric_version: RubricVersion, key: str) -> Criterion:
    criterion = rubric_version.criteria.filter(key=key).first()
    if criterion is None:
        keys = ", ".join(rubric_version.criteria.order_by("order").values_list("key", flat=True))
        raise CommandError(f"unknown criterion {key!r} in {rubric_version.ref} (known: {keys})")
    return criterion


def _group(ref: str, workspace: Workspace) -> AuditPlanGroup:
    if not ref.isdigit():
        raise CommandError(f"an audit group is named by its id (a number), got {ref!r}")
    group = in_workspace(AuditPlanGroup.objects.select_related("eval_set", "judge_config"), workspace)
    found = group.filter(pk=int(ref)).first()
    if found is None:
        raise CommandError(f"no audit group {ref}")
    return found


def _plan(ref: str, workspace: Workspace) -> AuditPlan:
    if not ref.isdigit():
        raise CommandError(f"a plan is named by its id (a number), got {ref!r}")
    # A plan of another workspace is as missing as one that never was.
    plan = in_workspace(AuditPlan.objects.for_figures(), workspace).filter(pk=int(ref)).first()
    if plan is None:
        raise CommandError(f"no audit plan {ref}")
    return plan


def _user(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"unknown user {username!r}")
    return user


def _k(k: int) -> int:
    if k < 1:
        raise CommandError(f"-k must be at least 1, got {k}")
    return k


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def predictor_lines(predictor: dict | None) -> list[str]:
    """What the tests read beside gold, and each signal's correlation with gold so far and weight now."""
    if predictor is None:
        return []
    lines = [f"predictor: {predictor['in_words']}"]
    for s in predictor["signals"]:
        lines.append(
            f"  {s['name']} ({s['role']}, {s['reads']}): r with gold {_fmt(s['correlation'])} on {s['n']} gold, "
            f"weight {s['weight']:.3f}, missing on {s['missing']}"
        )
    if predictor["jury"] and len(predictor["signals"]) > 1:
        jury = predictor["jury"]
        lines.append(f"  the jury together: R {_fmt(jury['correlation'])} on {jury['n']} gold")
    return lines


def text(f: AuditFigures) -> str:
    """The figures as a lead reads them; the forecast worded as a forecast."""
    agent = f", agent version {f.agent_version}" if f.agent_version else ""
    decided = {"PASS": "PASS", "FAIL": "FAIL"}.get(f.decided or "", "not yet")
    how = (
        f" (at label {f.decided_at}, by the {'exact rule' if f.decided_by == 'exact' else 'test'})" if f.decided else ""
    )
    c = f.forecast
    lines = [
        f"audit plan {f.plan}: {f.criterion} of {f.rubric} on {f.eval_set}{agent}, judge {f.judge}",
        f"minimum pass rate {f.min_pass_rate:g} at confidence {f.confidence:g}; order seed {f.seed}",
        f"labeled {f.n_labeled} of {f.N} ({f.n_gold} gold PASS or FAIL, {f.n_not_applicable} N/A, "
        f"{f.n_awaiting_gold} pending, {f.n_gold_cant_tell} Can't tell); released to the queue: {f.released}",
        *(
            [
                f"stratified by the judge's verdict: {f.strata_labeled[0]} of the {f.strata_sizes[0]} it passed, "
                f"{f.strata_labeled[1]} of the {f.strata_sizes[1]} others labeled"
            ]
            if f.strata_sizes and f.strata_labeled
            else []
        ),
        f"estimate {_fmt(f.estimate)}; anytime-valid interval [{_fmt(f.lower)}, {_fmt(f.upper)}]",
        f"decided: {decided}{how}",
        *predictor_lines(f.predictor),
    ]
    if f.kept:
        lines.append(f"kept as the plan's decision: {f.kept.words}")
        if f.kept.differs:
            lines.append(
                "warning: the gate does not decide on this plan while today's gold reads otherwise: review the "
                "changed gold, then close the plan and start a new one"
            )
    if f.decided:
        lines.append(f"labels saved against labeling all {f.N}: {f.labels_saved}")
    else:
        chance = (
            f"a decision with chance {c.p_decided:.0%} (PASS {c.p_pass:.0%}, FAIL {c.p_fail:.0%})"
            if c.p_decided
            else "no simulation decides"
        )
        lines.append(
            f"forecast (Monte Carlo, not a promise): after {c.k} more labels {chance}; "
            f"about {f.expected_more_labels} more labels to a decision, 90% within {c.p90_labels}"
        )
        if f.n_settled < f.min_gold:
            lines.append(f"no decision by the test before {f.min_gold} gold items (the exact rule always applies)")
    if f.outputs_outside_order:
        lines.append(
            f"warning: {f.outputs_outside_order} outputs of the candidate came after the order and are not audited"
        )
    return "\n".join(lines)
