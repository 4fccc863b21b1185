"""Importing human labels and adjudicated gold labels (JSONL, CSV, Label Studio JSON).

One record is one outcome for one criterion of one output, by an annotator (a
label) or an adjudicator (a gold label). The labels of one annotator for one
output become one submitted Annotation (source=import); its slot follows the
order in which annotators first appear for that output in the file, after any
annotations already there. A label already there with the same outcome and
evidence is skipped; with different ones it is an error, never an overwrite.

A gold line whose adjudicator is "agreement" (what export_data writes where the
annotators' majority is the gold) is checked against the labels, not stored:
agreement is derived when reading, only adjudications are stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from django.db import IntegrityError, transaction
from django.utils import timezone

from evals import record_fields as f
from evals.models import (
    Case,
    Criterion,
    EvalSet,
    GoldPolicy,
    Membership,
    Output,
    Role,
    RubricVersion,
    User,
    Workspace,
)
from evals.problems import Problems, RecordError
from evals.transcript import Transcript
from evals.validators import UnknownName
from labeling.models import Annotation, GoldLabel, Label

from . import registry
from .case_records import DEFAULT_AGENT_VERSION
from .import_summary import ImportReport, plural
from .label_records import (
    AGREEMENT,
    LabelRecord,
)
from .planner import analyze_after_import
from .readers import Source, peek_first_line, refuse_unsupported_type
from .record_model import AGENT_VERSION_MAX

QUERY_BATCH = 500


def strict_majority(outcomes: Iterable[str], policy: str = GoldPolicy.MAJORITY) -> str | None:
    """The gold the labels give under the criterion's gold policy, else None (gold then needs an
    adjudication): labeling.gold.gold_of_votes, the rule that decides gold everywhere else."""
    from labeling.gold import gold_of_votes  # lazily: the gold module loads pandas for its frame version

    return gold_of_votes(outcomes, policy)


def iter_records(
    source: Source, problems: Problems, default_agent_version: str, criteria: list[str]
) -> Iterator[LabelRecord]:
    suffix = source.suffix
    if suffix in (".yaml", ".yml"):
        raise problems.fatal(None, None, "this is a YAML file, as rubrics are; import a rubric with import_rubric")
    if suffix in (".evalset.json", ".evalset_result.json"):
        raise problems.fatal(None, None, "this is an ADK eval file; import it with import_cases")
    refuse_unsupported_type(source, problems, registry.FILE_TYPES[registry.LABELS], "labels")
    first = peek_first_line(source)
    if not first:
        raise problems.fatal(None, None, "the file is empty")
    if suffix == ".csv" or (suffix not in (".json", ".jsonl", ".ndjson") and first[:1] not in (b"{", b"[")):
        name = "csv"
    elif suffix in (".jsonl", ".ndjson") or _whole_object(first):
        name = "jsonl"
    else:
        name = "labelstudio"
    options = registry.ReadOptions(default_agent_version=default_agent_version, criteria=tuple(criteria))
    yield from registry.find(registry.LABELS, name).read(source, problems, options)


def _whole_object(first: bytes) -> bool:
    try:
        return isinstance(f.parse_json(first.decode("utf-8", "replace")), dict)
    except f.ShapeError:  # a whole value refused for its shape: the reader of its kind says where
        return first[:1] == b"{"
    except ValueError:
        return False


# --- planning and writing ----------------------------------------------------------------------------------


def _chunks(items: list, size: int = QUERY_BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]


class LabelImport:
    """Resolves records against the database, then writes what is new; all inside one transaction."""

    def __init__(self, eval_set: EvalSet, rv: RubricVersion, problems: Problems) -> None:
        self.eval_set, self.rv, self.problems = eval_set, rv, problems
        self.criteria: dict[str, Criterion] = {c.key: c for c in rv.criteria.all()}
        self.counts: Counter[str] = Counter()
        self.new_accounts: list[str] = []
        self.not_verbatim = 0
        self.outside_response = 0

    def run(self, records: list[LabelRecord]) -> None:
        outputs = self._resolve_outputs(records)
        records = [r for r in records if r.output_key in outputs]
        labels, golds, agreements = self._dedupe(records)
        users = self._users(labels + golds)
        output_ids = sorted({outputs[r.output_key] for r in records})
        annotations, current = self._existing_labels(output_ids)
        existing_gold = self._existing_gold(output_ids)
        new_annotations, new_labels = self._plan_labels(labels, outputs, users, annotations, current)
        new_gold = self._plan_gold(golds, outputs, users, existing_gold)
        self._check_agreement(agreements, outputs, annotations, current, new_annotations, new_labels)
        if self.problems:
            return
        self._write(new_annotations, new_labels, new_gold, outputs)

    def _resolve_outputs(self, records: list[LabelRecord]) -> dict[tuple[str, str], int]:
        case_ids = sorted({r.case_id for r in records})
        outputs: dict[tuple[str, str], int] = {}
        known_cases: set[str] = set()
        for chunk in _chunks(case_ids):
            for pk, case_id, version in Output.objects.filter(
                case__eval_set=self.eval_set, case__case_id__in=chunk
            ).values_list("pk", "case__case_id", "agent_version"):
                outputs[(case_id, version)] = pk
            known_cases.update(
                Case.objects.filter(eval_set=self.eval_set, case_id__in=chunk).values_list("case_id", flat=True)
            )
        reported: set[tuple[str, str]] = set()
        for r in records:
            if r.output_key in outputs or r.output_key in reported:
                continue
            reported.add(r.output_key)
            if r.case_id not in known_cases:
                message = f'eval set "{self.eval_set.name}" has no case "{r.case_id}"; import the cases first'
                self.problems.add(r.line, "case_id", message)
            else:
                versions = sorted(v for (c, v) in outputs if c == r.case_id) or ["none"]
                message = (
                    f'case "{r.case_id}" has no output for agent_version "{r.agent_version}" '
                    f"(it has: {', '.join(versions)})"
                )
                self.problems.add(r.line, "agent_version", message)
        return outputs

    def _dedupe(self, records: list[LabelRecord]):
        """Split records into labels, gold labels and agreement lines; a repeat must match its first line."""
        labels: list[LabelRecord] = []
        golds: list[LabelRecord] = []
        agreements: list[LabelRecord] = []
        seen: dict[tuple, LabelRecord] = {}
        key: tuple
        same: tuple[str, ...]
        for r in records:
            if not r.gold:
                key, bucket, same = ("label", r.output_key, r.criterion, r.person), labels, ("outcome", "text", "more")
            elif r.person == AGREEMENT:
                key, bucket, same = ("agreement", r.output_key, r.criterion), agreements, ("outcome",)
            else:
                key, bucket, same = ("gold", r.output_key, r.criterion), golds, ("person", "outcome", "text")
            first = seen.get(key)
            if first is None:
                seen[key] = r
                bucket.append(r)
                continue
            differing = [a for a in same if getattr(first, a) != getattr(r, a)]
            if not differing:
                self.counts["repeated_lines"] += 1
                continue
            field = {"person": "adjudicator", "text": "rationale" if r.gold else "evidence", "more": "evidence"}.get(
                differing[0], differing[0]
            )
            what = "gold label" if r.gold else f"{r.person}'s label"
            self.problems.add(
                r.line,
                field,
                f'a different {what} for case "{r.case_id}" ({r.agent_version}), criterion "{r.criterion}" '
                f"than on line {first.line}",
            )
        return labels, golds, agreements

    def _users(self, records: list[LabelRecord]) -> dict[str, int]:
        roles: dict[str, str] = {}
        for r in records:
            roles.setdefault(r.person, Role.REVIEWER if r.gold else Role.ANNOTATOR)
        users: dict[str, int] = {}
        names = sorted(roles)
        for chunk in _chunks(names):
            users.update(dict(User.objects.filter(username__in=chunk).values_list("username", "pk")))
            self._refuse_labels_of_staff(records, chunk)
        missing = [n for n in names if n not in users]
        if missing and not self.problems:
            # Accounts that cannot log in until a lead activates them (add_user sets a password), members of
            # this eval set's workspace with the role their lines show.
            new = []
            for name in missing:
                user = User(username=name, is_active=False)
                user.set_unusable_password()
                new.append(user)
            made = User.objects.bulk_create(new)
            Membership.objects.bulk_create(
                [
                    Membership(user=user, workspace_id=self.eval_set.workspace_id, role=roles[user.username])
                    for user in made
                ]
            )
            for user in made:
                users[user.username] = user.pk
            self.new_accounts = missing
        return users

    def _refuse_labels_of_staff(self, records: list[LabelRecord], names: list[str]) -> None:
        """The blind rule per person (docs/labeling.md): only annotators give labels. Labels for an existing
        reviewer, lead or superuser (who can read judge verdicts and other people's labels) are refused, at
        each person's first label line; their gold lines (adjudicator) are fine."""
        workspace_id = self.eval_set.workspace_id
        found = User.objects.filter(username__in=names)
        roles = dict(
            Membership.objects.filter(user__in=found, workspace_id=workspace_id).values_list("user__username", "role")
        )
        outsiders = {u.username for u in found if u.username not in roles and not u.is_superuser}
        for r in records if outsiders else ():
            if r.person in outsiders:
                outsiders.discard(r.person)  # once per person
                self.problems.add(
                    r.line,
                    "annotator" if not r.gold else "adjudicator",
                    f'"{r.person}" has an account but is not a member of this workspace: a lead adds them on its '
                    "Members page first (their labels would otherwise be given by someone outside the team)",
                )
        kinds = {
            u.username: "superuser" if u.is_superuser else Role(roles[u.username]).label.lower()
            for u in found
            if u.is_superuser or roles.get(u.username, Role.ANNOTATOR) != Role.ANNOTATOR
        }
        for r in records if kinds else ():
            kind = None if r.gold else kinds.pop(r.person, None)  # once per person
            if kind is not None:
                self.problems.add(
                    r.line,
                    "annotator",
                    f'"{r.person}" is a {kind} account: only annotators give labels (reviewers and leads can read '
                    "judge verdicts and other people's labels, so theirs are not blind); leave this person's labels "
                    "out, or name the annotator who gave them",
                )

    def _existing_labels(self, output_ids: list[int]):
        annotations: dict[tuple[int, int], dict] = {}
        for chunk in _chunks(output_ids):
            for pk, output_id, annotator_id, slot, status, source in Annotation.objects.filter(
                rubric_version=self.rv, output_id__in=chunk
            ).values_list("pk", "output_id", "annotator_id", "slot", "status", "source"):
                annotations[(output_id, annotator_id)] = {"pk": pk, "slot": slot, "status": status, "source": source}
        by_pk = {a["pk"]: key for key, a in annotations.items()}
        current: dict[tuple[int, int], tuple[str, str, tuple[str, ...]]] = {}
        for chunk in _chunks(list(by_pk)):
            for annotation_id, criterion_id, outcome, evidence, more in (
                Label.objects.current()
                .filter(annotation_id__in=chunk)
                .values_list("annotation_id", "criterion_id", "outcome", "evidence", "more_evidence")
            ):
                current[(annotation_id, criterion_id)] = (outcome, evidence, tuple(more or ()))
        return annotations, current

    def _existing_gold(self, output_ids: list[int]) -> tuple[dict, dict]:
        """Current gold per (output, criterion), and the highest revision each already has."""
        current: dict[tuple[int, int], tuple[str, str, str]] = {}
        revisions: dict[tuple[int, int], int] = {}
        criterion_ids = [c.pk for c in self.criteria.values()]
        for chunk in _chunks(output_ids):
            rows = GoldLabel.objects.filter(output_id__in=chunk, criterion_id__in=criterion_ids).values_list(
                "output_id", "criterion_id", "outcome", "decided_by__username", "rationale", "revision", "is_current"
            )
            for output_id, criterion_id, outcome, username, rationale, revision, is_current in rows:
                key = (output_id, criterion_id)
                revisions[key] = max(revision, revisions.get(key, 0))
                if is_current:
                    current[key] = (outcome, username, rationale)
        return current, revisions

    def _plan_labels(self, labels, outputs, users, annotations, current):
        next_slot: dict[int, int] = {}
        for (output_id, _), a in annotations.items():
            next_slot[output_id] = max(next_slot.get(output_id, 1), a["slot"] + 1)
        new_annotations: dict[tuple[int, int], int] = {}  # (output, annotator) -> slot
        new_labels: list[tuple[tuple[int, int], int | None, LabelRecord]] = []
        for r in labels:
            output_id, criterion = outputs[r.output_key], self.criteria[r.criterion]
            user_id = users.get(r.person)
            if user_id is None:
                continue  # not created because the import already failed
            key = (output_id, user_id)
            existing = annotations.get(key)
            if existing is None:
                if key not in new_annotations:
                    new_annotations[key] = next_slot.get(output_id, 1)
                    next_slot[output_id] = new_annotations[key] + 1
                new_labels.append((key, None, r))
                continue
            old = current.get((existing["pk"], criterion.pk))
            if old == (r.outcome, r.text, r.more):
                self.counts["labels_unchanged"] += 1
            elif old is not None:
                differs = "outcome" if old[0] != r.outcome else "evidence"
                self.problems.add(
                    r.line,
                    differs,
                    f'{r.person} already labeled case "{r.case_id}" ({r.agent_version}), criterion "{r.criterion}" '
                    f"as {old[0]}{' with different evidence' if differs == 'evidence' else ''}; a label is not "
                    "overwritten by an import (correct it in the app, where the change is kept as a revision)",
                )
            elif existing["source"] == Annotation.Source.IMPORT and existing["status"] == Annotation.Status.SUBMITTED:
                new_labels.append((key, existing["pk"], r))
            else:
                self.problems.add(
                    r.line,
                    "annotator",
                    f'{r.person} has a {existing["status"]} annotation made in the app for case "{r.case_id}" '
                    f"({r.agent_version}); imported labels are not merged into it",
                )
        return new_annotations, new_labels

    def _plan_gold(self, golds, outputs, users, existing_gold):
        current, revisions = existing_gold
        new_gold = []
        for r in golds:
            output_id, criterion = outputs[r.output_key], self.criteria[r.criterion]
            if users.get(r.person) is None:
                continue  # not created because the import already failed
            old = current.get((output_id, criterion.pk))
            if old is None:
                # After old, no longer current revisions (if any): revisions only grow.
                revision = revisions.get((output_id, criterion.pk), 0) + 1
                new_gold.append((output_id, criterion, users[r.person], r, revision))
            elif old == (r.outcome, r.person, r.text):
                self.counts["gold_unchanged"] += 1
            else:
                self.problems.add(
                    r.line,
                    "outcome" if old[0] != r.outcome else "adjudicator" if old[1] != r.person else "rationale",
                    f'case "{r.case_id}" ({r.agent_version}), criterion "{r.criterion}" already has gold {old[0]} '
                    f"decided by {old[1]}; an import does not replace an adjudication (change it in the app, "
                    "where it becomes a new revision)",
                )
        return new_gold

    def _check_agreement(self, agreements, outputs, annotations, current, new_annotations, new_labels) -> None:
        if not agreements:
            return
        votes: dict[tuple[int, int], list[str]] = {}
        submitted = {a["pk"]: out for (out, _), a in annotations.items() if a["status"] == Annotation.Status.SUBMITTED}
        for (annotation_pk, criterion_pk), (outcome, *_) in current.items():
            if annotation_pk in submitted:
                votes.setdefault((submitted[annotation_pk], criterion_pk), []).append(outcome)
        for (output_id, _), _, r in new_labels:
            votes.setdefault((output_id, self.criteria[r.criterion].pk), []).append(r.outcome)
        for r in agreements:
            found = votes.get((outputs[r.output_key], self.criteria[r.criterion].pk), [])
            majority = strict_majority(found, self.criteria[r.criterion].gold_policy)
            if majority == r.outcome:
                self.counts["agreement_confirmed"] += 1
                continue
            shown = ", ".join(sorted(found)) or "no labels"
            self.problems.add(
                r.line,
                "outcome",
                f'gold by agreement says {r.outcome} for case "{r.case_id}" ({r.agent_version}), criterion '
                f'"{r.criterion}", but the labels ({shown}) '
                + (f"agree on {majority}" if majority else "have no majority")
                + "; agreement gold is derived from labels, so import the labels first (or give an adjudicator)",
            )

    def _write(self, new_annotations, new_labels, new_gold, outputs) -> None:
        now = timezone.now()
        created = Annotation.objects.bulk_create(
            [
                Annotation(
                    output_id=output_id,
                    rubric_version=self.rv,
                    annotator_id=user_id,
                    slot=slot,
                    status=Annotation.Status.SUBMITTED,
                    source=Annotation.Source.IMPORT,
                    submitted_at=now,
                )
                for (output_id, user_id), slot in new_annotations.items()
            ],
            batch_size=QUERY_BATCH,
        )
        annotation_pk = {(a.output_id, a.annotator_id): a.pk for a in created}
        transcripts = self._transcripts(sorted({key[0] for key, _, r in new_labels if r.text}))
        labels = [
            Label(
                annotation_id=pk if pk is not None else annotation_pk[key],
                criterion=self.criteria[r.criterion],
                outcome=r.outcome,
                evidence=r.text,
                more_evidence=list(r.more),
            )
            for key, pk, r in new_labels
        ]
        for label, (key, _, r) in zip(labels, new_labels, strict=True):
            if r.text:
                label.place_quotes(transcripts[key[0]])
        Label.objects.bulk_create(labels, batch_size=QUERY_BATCH)
        GoldLabel.objects.bulk_create(
            [
                GoldLabel(
                    output_id=output_id,
                    rubric_version=self.rv,
                    criterion=criterion,
                    outcome=r.outcome,
                    decided_by_id=user_id,
                    rationale=r.text,
                    source=GoldLabel.Source.IMPORT,
                    revision=revision,
                    decided_at=now,
                )
                for output_id, criterion, user_id, r, revision in new_gold
            ],
            batch_size=QUERY_BATCH,
        )
        self.counts["annotations_created"] += len(created)
        self.counts["labels_created"] += len(new_labels)
        self.counts["gold_created"] += len(new_gold)
        # Imported evidence is kept as given; the report says how much of it is not a verbatim quote.
        self.not_verbatim = sum(
            1 for key, _, r in new_labels if r.text for q in (r.text, *r.more) if not transcripts[key[0]].contains(q)
        )
        self.outside_response = sum(label.quotes_outside_response for label in labels)

    @staticmethod
    def _transcripts(output_ids: list[int]) -> dict[int, Transcript]:
        """The transcripts of these outputs, a batch of outputs per query."""
        transcripts: dict[int, Transcript] = {}
        for chunk in _chunks(output_ids):
            for pk, input_, tool_calls, response in Output.objects.filter(pk__in=chunk).values_list(
                "pk", "case__input", "tool_calls", "response"
            ):
                transcripts[pk] = Transcript(input=input_, tool_calls=list(tool_calls or []), response=response)
        return transcripts


def import_labels(
    *,
    source: Source,
    workspace: Workspace,
    eval_set_name: str,
    rubric_ref: str,
    default_agent_version: str = DEFAULT_AGENT_VERSION,
) -> ImportReport:
    """Import labels and gold for `workspace`'s eval set and rubric version of these names (both must exist)."""
    problems = Problems(source.name)
    eval_set = EvalSet.objects.filter(workspace=workspace, name=eval_set_name).first()
    if eval_set is None:
        raise problems.fatal(None, "eval set", f'there is no eval set "{eval_set_name}"; import its cases first')
    try:
        rv = RubricVersion.objects.by_ref(rubric_ref, workspace)
        default_agent_version = f.ident(default_agent_version, "agent_version", AGENT_VERSION_MAX)
    except UnknownName as exc:
        raise problems.fatal(None, "rubric", str(exc)) from None
    except RecordError as exc:
        raise problems.fatal(None, exc.field, exc.message) from None
    criteria = list(rv.criteria.order_by("order").values_list("key", flat=True))
    records = list(iter_records(source, problems, default_agent_version, criteria))
    if not records and not problems:
        raise problems.fatal(None, None, "the file has no labels")
    job = LabelImport(eval_set, rv, problems)
    try:
        with transaction.atomic():
            EvalSet.objects.select_for_update().filter(pk=eval_set.pk).first()
            job.run(records)
            problems.raise_if_any()
    except IntegrityError as exc:
        raise problems.fatal(None, None, f"labels changed in the app during the import; try again ({exc})") from None
    c = job.counts
    analyze_after_import(c["labels_created"] + c["gold_created"], Annotation, Label, GoldLabel)
    keys = ("annotations_created", "labels_created", "labels_unchanged", "gold_created", "gold_unchanged")
    counts = {"records": len(records), **{k: c[k] for k in keys}}
    counts.update(agreement_confirmed=c["agreement_confirmed"], repeated_lines=c["repeated_lines"])
    counts["accounts_created"] = len(job.new_accounts)
    summary = (
        f'{source.name} -> eval set "{eval_set.name}", {rv.ref}: '
        f"{plural(c['labels_created'], 'label')} created in {plural(c['annotations_created'], 'new annotation')}, "
        f"{c['labels_unchanged']:,} already there; {plural(c['gold_created'], 'gold label')} created, "
        f"{c['gold_unchanged']:,} already there."
    )
    notes = []
    if c["agreement_confirmed"]:
        notes.append(f"{plural(c['agreement_confirmed'], 'agreement gold line')} matched the labels (nothing stored).")
    if c["repeated_lines"]:
        notes.append(f"{plural(c['repeated_lines'], 'repeated line')} skipped (identical to an earlier line).")
    if job.new_accounts:
        shown = ", ".join(job.new_accounts[:20]) + (" ..." if len(job.new_accounts) > 20 else "")
        notes.append(
            "New accounts that cannot log in until a lead activates them "
            f"(add_user NAME --workspace {workspace.slug} --role ...): {shown}."
        )
    counts["quotes_outside_response"] = job.outside_response
    if job.outside_response:
        notes.append(
            f"{plural(job.outside_response, 'evidence quote')} found only outside the response (in the input or a "
            "tool call): it shows what the agent was given, not what it said."
        )
    if job.not_verbatim:
        notes.append(
            f"{plural(job.not_verbatim, 'evidence quote')} not found verbatim in the output's transcript "
            "(kept as given; imported evidence is not required to quote)."
        )
    return ImportReport(file=source.name, summary=summary, counts=counts, notes=notes)
