"""python manage.py watch start --eval-set NAME --rubric NAME@VERSION --criterion KEY --judge NAME --audit-share P
--by LEAD [--alpha A] [--minimum M] [--tpr-lower X] [--tnr-lower Y]

python manage.py watch list
python manage.py watch show WATCH [--format text|json]
python manage.py watch stop WATCH --by LEAD

A watch on production traffic (issue 39, docs/calibration.md "The watch in the product"). `start` prints the new
watch's id; the minimum and the TPR/TNR bounds default to the criterion's gating mark with the judge. Every action
takes --workspace; a watch of another workspace is as missing as one that never was.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from evals.lookup import eval_set_named
from evals.models import RubricVersion, User, Workspace
from evals.validators import UnknownName
from evals.workspace_option import add_workspace_argument, chosen_workspace
from evals.workspaces import in_workspace
from judging.judge_lookup import judge_named
from watch.figures import watch_figures, watch_record
from watch.models import Watch
from watch.starting import WatchError, start, stop
from watch.tasks import send_update


class Command(BaseCommand):
    help = "Start, list, show or stop a watch on a production eval set."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="start|list|show|stop")
        begin = actions.add_parser("start", help="start a watch; prints its id")
        begin.add_argument("--eval-set", required=True, help="the production eval set")
        begin.add_argument("--rubric", required=True, help="NAME@VERSION")
        begin.add_argument("--criterion", required=True, help="the criterion's key")
        begin.add_argument("--judge", required=True, help="the judge config that grades the outputs")
        begin.add_argument("--audit-share", required=True, type=float, help="p: e.g. 0.01 sends 1%% to annotators")
        begin.add_argument("--by", required=True, help="username of the lead who starts it")
        begin.add_argument("--alpha", type=float, help="each test's false-alarm probability (default 0.05)")
        begin.add_argument("--minimum", type=float, help="default: the gating mark's minimum pass rate")
        begin.add_argument("--tpr-lower", type=float, help="default: the lower end of the calibration's TPR interval")
        begin.add_argument("--tnr-lower", type=float, help="default: the lower end of the calibration's TNR interval")
        listing = actions.add_parser("list", help="the workspace's watches, newest first")
        show = actions.add_parser("show", help="a watch's figures now")
        show.add_argument("watch", help="the watch's id")
        show.add_argument("--format", choices=["text", "json"], default="text")
        end = actions.add_parser("stop", help="stop a watch")
        end.add_argument("watch", help="the watch's id")
        end.add_argument("--by", required=True, help="username of the lead who stops it")
        for action in (begin, listing, show, end):
            add_workspace_argument(action)

    def handle(self, *args, **opts):
        workspace = chosen_workspace(opts["workspace"])
        try:
            if opts["action"] == "start":
                self._start(opts, workspace)
            elif opts["action"] == "list":
                for watch in in_workspace(Watch.objects.select_related("eval_set", "criterion"), workspace):
                    r = watch_record(watch)
                    self.stdout.write(
                        f"{r['id']}\t{r['status']}\t{r['criterion']} of {r['rubric']} on {r['eval_set']}, judge "
                        f"{r['judge']}\t{r['labels']} audit labels, {r['outputs']} outputs"
                    )
            elif opts["action"] == "show":
                figures = watch_figures(_watch(opts["watch"], workspace))
                self.stdout.write(json.dumps(figures, indent=2) if opts["format"] == "json" else text(figures))
            else:
                watch = stop(watch=_watch(opts["watch"], workspace), by=_user(opts["by"]))
                self.stdout.write(f"watch {watch.pk} stopped")
        except (UnknownName, WatchError) as exc:
            raise CommandError(str(exc)) from None

    def _start(self, opts, workspace: Workspace) -> None:
        rubric_version = RubricVersion.objects.by_ref(opts["rubric"], workspace)
        criterion = rubric_version.criteria.filter(key=opts["criterion"]).first()
        if criterion is None:
            keys = ", ".join(rubric_version.criteria.order_by("order").values_list("key", flat=True))
            raise CommandError(f"unknown criterion {opts['criterion']!r} in {rubric_version.ref} (known: {keys})")
        watch = start(
            eval_set=eval_set_named(opts["eval_set"], workspace),
            criterion=criterion,
            judge_config=judge_named(opts["judge"], workspace),
            by=_user(opts["by"]),
            audit_share=opts["audit_share"],
            alpha=opts["alpha"],
            minimum=opts["minimum"],
            tpr_lower=opts["tpr_lower"],
            tnr_lower=opts["tnr_lower"],
        )
        send_update(watch.pk)
        self.stdout.write(str(watch.pk))


def _watch(ref: str, workspace: Workspace) -> Watch:
    if not ref.isdigit():
        raise CommandError(f"a watch is named by its id (a number), got {ref!r}")
    watch = in_workspace(Watch.objects.all(), workspace).filter(pk=int(ref)).first()
    if watch is None:
        raise CommandError(f"no watch {ref}")
    return watch


def _user(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"unknown user {username!r}")
    return user


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def text(f: dict) -> str:
    lines = [
        f"watch {f['id']} ({f['status']}): {f['criterion']} of {f['rubric']} on {f['eval_set']}, judge {f['judge']}",
        f"{f['freshness']}",
    ]
    lines += [f"ALARM: {a['message']}" for a in f["alarms"]]
    for what, b in f["bands"].items():
        lines.append(
            f"{what}: estimate {_fmt(b['estimate'])}, band {b['lower']:.2f} to {b['upper']:.2f}, bound {b['bound']:.3f}"
        )
    lines += [
        f"minimum {f['minimum']:g} ({f['minimum_source']}); TPR bound {f['tpr_lower']:.3f}, TNR bound "
        f"{f['tnr_lower']:.3f} ({f['bounds_source']})",
        f"audit share {f['audit_share']:g}: {f['drawn']} of {f['arrived']} arrived outputs drawn; alpha {f['alpha']:g}",
        f"waiting: {f['awaiting_verdict']} for a verdict, {f['awaiting_gold']} drawn ones not yet fed; "
        f"{f['unjudged']} without a usable verdict",
    ]
    if f["problem"]:
        lines.append(f"problem: {f['problem']}")
    return "\n".join(lines)
