"""python manage.py judge_guidance: a judge's own guidance, its versions and the gold split that guards them.

    judge_guidance show JUDGE
    judge_guidance derive JUDGE --file guidance.yaml|.json --by LEAD [--rubric NAME@VERSION]
    judge_guidance split start --eval-set E --rubric NAME@VERSION --by LEAD [--seed N]
    judge_guidance split show --eval-set E --rubric NAME@VERSION
    judge_guidance count --eval-set E --rubric NAME@VERSION --judge JUDGE [--part development|held_out]
    judge_guidance held-out --eval-set E --rubric NAME@VERSION --judge A [--judge B ...] [--by USER]

docs/judging.md, "Improving a judge". It lives in calibration because `held-out` reads report figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError

from calibration.workbench.holdout_looks import look_at_held_out
from evals.lookup import eval_set_named
from evals.models import EvalSet, RubricVersion, User
from evals.record_fields import ShapeError, parse_json
from evals.validators import UnknownName
from evals.workspace_option import add_workspace_argument, chosen_workspace
from judging import runner
from judging.backends import Misconfigured
from judging.gold_splits import SplitRefused, describe, split_for, start_split
from judging.guidance import GuidanceRefused, as_document, derive_config
from judging.judge_lookup import judge_named
from judging.models import GoldSplit

# A guidance file is a few notes and examples: anything bigger is a mistake (a transcript dump), refused unread.
MAX_FILE_BYTES = 1_000_000


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML would keep the last silently)."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def read_guidance(path: Path) -> Any:
    """The guidance document of a .json, .yaml or .yml file; CommandError with the line for a syntax error."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise CommandError(
                f"{path}: larger than {MAX_FILE_BYTES:,} bytes; a guidance file holds notes and excerpts"
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f", line {mark.line + 1} column {mark.column + 1}" if mark else ""
            raise CommandError(
                f"{path}{where}: not valid YAML ({exc.problem or exc.context}). Nothing was written."
            ) from None
        except yaml.YAMLError as exc:
            raise CommandError(f"{path}: not valid YAML ({exc}). Nothing was written.") from None
    if path.suffix.lower() != ".json":
        raise CommandError(f"{path}: give a .json, .yaml or .yml file")
    try:
        return parse_json(text)
    except ShapeError as exc:
        line = text.count("\n", 0, exc.offset) + 1
        raise CommandError(f'{path}, line {line}, field "{exc.path}": {exc.message}. Nothing was written.') from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}, line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    except ValueError as exc:
        raise CommandError(f"{path}: not valid JSON ({exc})") from None


class Command(BaseCommand):
    help = (
        "A judge's own guidance (notes and examples per criterion, never the rubric), its versions, and the gold "
        "split of development and held-out items that guards them. docs/judging.md, 'Improving a judge'."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        show = sub.add_parser("show", help="print a judge config's guidance as JSON")
        show.add_argument("judge")
        derive = sub.add_parser("derive", help="make a new version of a judge config with the guidance of a file")
        derive.add_argument("judge", help="the version to derive from")
        derive.add_argument("--file", required=True, help="a .json, .yaml or .yml guidance document")
        derive.add_argument("--by", required=True, help="username of the lead")
        derive.add_argument("--rubric", help="NAME@VERSION (instead of the file's 'rubric')")
        split = sub.add_parser("split", help="start or show the gold split of an eval set")
        split.add_argument("split_action", choices=["start", "show"])
        split.add_argument("--eval-set", required=True)
        split.add_argument("--rubric", required=True, help="NAME@VERSION")
        split.add_argument("--by", help="username of the lead (start)")
        split.add_argument("--seed", type=int, help="the seed (start; drawn at random if not given)")
        count = sub.add_parser("count", help="the model calls a run of one split part would make (cache hits free)")
        count.add_argument("--eval-set", required=True)
        count.add_argument("--rubric", required=True, help="NAME@VERSION")
        count.add_argument("--judge", required=True)
        count.add_argument("--part", choices=list(GoldSplit.PARTS), default=GoldSplit.DEVELOPMENT)
        held = sub.add_parser("held-out", help="held-out figures of judge versions: counted as one look")
        held.add_argument("--eval-set", required=True)
        held.add_argument("--rubric", required=True, help="NAME@VERSION")
        held.add_argument("--judge", action="append", required=True, help="a judge config (repeat to compare)")
        held.add_argument("--by", help="username of who looks (recorded with the look)")
        for action in (show, derive, split, count, held):
            add_workspace_argument(action)

    def handle(self, *args, **opts):
        opts["workspace"] = chosen_workspace(opts["workspace"])  # the slug, read once into its workspace
        try:
            getattr(self, "_" + opts["action"].replace("-", "_"))(opts)
        except (GuidanceRefused, SplitRefused, Misconfigured, UnknownName) as exc:
            raise CommandError(f"{exc}. Nothing was written.") from None

    def _show(self, opts) -> None:
        self.stdout.write(
            json.dumps(as_document(judge_named(opts["judge"], opts["workspace"])), indent=2, ensure_ascii=False)
        )

    def _derive(self, opts) -> None:
        base, user = judge_named(opts["judge"], opts["workspace"]), _user(opts["by"])
        document = read_guidance(Path(opts["file"]))
        rubric = RubricVersion.objects.by_ref(opts["rubric"], opts["workspace"]) if opts["rubric"] else None
        try:
            config = derive_config(base=base, guidance=document, by=user, rubric_version=rubric)
        except GuidanceRefused as exc:
            raise CommandError(f"{opts['file']}: {exc}. Nothing was written.") from None
        self.stdout.write(
            f"judge config {config.name} created from {base.name} (version {config.version}, "
            f"hash {config.content_hash[:12]}); {base.name} is unchanged."
        )

    def _split(self, opts) -> None:
        eval_set, rubric = _set_and_rubric(opts)
        if opts["split_action"] == "start":
            if not opts["by"]:
                raise CommandError("split start needs --by LEAD")
            existed = split_for(eval_set, rubric) is not None
            split = start_split(eval_set=eval_set, rubric_version=rubric, by=_user(opts["by"]), seed=opts["seed"])
            if existed:
                self.stdout.write(f"the split was already fixed (seed {split.seed}); it never changes.")
        else:
            found = split_for(eval_set, rubric)
            if found is None:
                raise CommandError(f"{eval_set.name} has no gold split under {rubric.ref} yet (split start)")
            split = found
        self.stdout.write(json.dumps(describe(split), indent=2))

    def _count(self, opts) -> None:
        scope = runner.resolve(
            workspace=opts["workspace"], eval_set=opts["eval_set"], rubric=opts["rubric"], judge=opts["judge"]
        )
        counted = runner.planned_calls(scope, runner.split_outputs_in(scope, opts["part"]))
        self.stdout.write(
            f"{counted.calls} model call(s) for {counted.items} item(s) of the {opts['part']} split "
            f"({counted.cached} answered by the cache, {counted.instrument_only} by instruments)."
        )

    def _held_out(self, opts) -> None:
        eval_set, rubric = _set_and_rubric(opts)
        split = split_for(eval_set, rubric)
        if split is None:
            raise CommandError(f"{eval_set.name} has no gold split under {rubric.ref}; there is no held-out part")
        configs = [judge_named(name, opts["workspace"]) for name in opts["judge"]]
        rows, looks = look_at_held_out(
            split=split, configs=configs, by=_user(opts["by"]) if opts["by"] else None, via="command"
        )
        self.stdout.write(f"held out: looked at {looks} time{'' if looks == 1 else 's'} (this look included)")
        for name, criteria in rows.items():
            for row in criteria:
                j = row.judge
                kappa = "undefined" if j.kappa is None else f"{j.kappa:.3f}"
                self.stdout.write(
                    f"{name}\t{row.criterion}\tn {j.n}\tkappa {kappa}\tfalse passes {j.false_pass}\t{row.tier}"
                )


def _set_and_rubric(opts) -> tuple[EvalSet, RubricVersion]:
    workspace = opts["workspace"]
    return eval_set_named(opts["eval_set"], workspace), RubricVersion.objects.by_ref(opts["rubric"], workspace)


def _user(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"unknown user {username!r}")
    return user
