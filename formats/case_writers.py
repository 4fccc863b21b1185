"""Writing imported cases and outputs: a portable bulk_create path and a PostgreSQL COPY path.

Both take rows that `cases.feed` has already validated and de-duplicated, check
them against what the eval set already holds (same content: skip; different:
a problem), and insert the rest. They must behave identically; the tests run
the same files through both.

The COPY path sends batches from a second thread (PostgreSQL works on one
batch while Python parses the next). Into an eval set that had no cases it
COPYs straight into the tables, since nothing can conflict; otherwise each
batch goes through temporary staging tables, and the database compares and
inserts in a few set-based statements. That is what keeps a 200,000-output
import close to the speed of a bare COPY (bench/import.py).
"""

from __future__ import annotations

import queue
import threading
import uuid
from collections import Counter

from django.db import connection

from evals.models import Case, EvalSet, Output
from evals.problems import Problems
from evals.record_fields import json_equal

from .case_records import CASE_COMPARED, OUTPUT_COMPARED, CaseRow, OutputRow, case_conflict, output_conflict

# Rows per query/INSERT on the portable path: well under SQLite's 32,766 bound parameters per statement.
BULK_BATCH = 500
# Rows per COPY statement: large enough that per-statement overhead vanishes, small enough to bound memory.
COPY_BATCH = 5000


def _chunks(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


class BulkWriter:
    """Portable path (SQLite, or PostgreSQL on request): batched lookups and bulk_create."""

    def __init__(self, eval_set: EvalSet, problems: Problems) -> None:
        self.eval_set = eval_set
        self.problems = problems
        self.case_pk: dict[str, int | None] = {}
        self.preexisting: set[int] = set()
        self.cases: list[CaseRow] = []
        self.outputs: list[OutputRow] = []
        self.counts: Counter[str] = Counter()

    def add_case(self, row: CaseRow) -> None:
        self.cases.append(row)

    def add_output(self, row: OutputRow) -> None:
        self.outputs.append(row)
        if len(self.outputs) >= BULK_BATCH:
            self.flush()

    def flush(self) -> None:
        self._flush_cases()
        self._flush_outputs()

    def finish(self) -> dict[str, int]:
        self.flush()
        return {k: self.counts[k] for k in ("cases_created", "cases_unchanged", "outputs_created", "outputs_unchanged")}

    def abort(self) -> None:
        """Nothing runs in the background on this path."""

    def _flush_cases(self) -> None:
        rows, self.cases = self.cases, []
        existing = {}
        for chunk in _chunks(rows, BULK_BATCH):
            found = Case.objects.filter(eval_set=self.eval_set, case_id__in=[r.case_id for r in chunk]).values_list(
                "pk", "case_id", "input", "reference", "metadata"
            )
            existing.update({row[1]: row for row in found})
        new = []
        for row in rows:
            old = existing.get(row.case_id)
            if old is None:
                new.append(row)
                continue
            mine = (row.input, row.reference, row.metadata if row.compare_metadata else old[4])
            differing = [name for name, a, b in zip(CASE_COMPARED, old[2:], mine, strict=True) if not json_equal(a, b)]
            if differing:
                self.case_pk[row.case_id] = None
                self.problems.add(row.line, differing[0], case_conflict(row.case_id, self.eval_set.name, differing))
            else:
                self.case_pk[row.case_id] = old[0]
                self.preexisting.add(old[0])
                self.counts["cases_unchanged"] += 1
        if self.problems or not new:
            return  # the import will be rolled back: only keep checking
        created = Case.objects.bulk_create(
            [
                Case(
                    eval_set=self.eval_set, case_id=r.case_id, input=r.input, reference=r.reference, metadata=r.metadata
                )
                for r in new
            ],
            batch_size=BULK_BATCH,
        )
        for case in created:
            self.case_pk[case.case_id] = case.pk
        self.counts["cases_created"] += len(created)

    def _flush_outputs(self) -> None:
        rows, self.outputs = self.outputs, []
        existing = {}
        to_check = [r for r in rows if self.case_pk.get(r.case_id) in self.preexisting]
        for chunk in _chunks(to_check, BULK_BATCH):
            found = Output.objects.filter(
                case_id__in={self.case_pk[r.case_id] for r in chunk},
                agent_version__in={r.agent_version for r in chunk},
            ).values_list("case_id", "agent_version", "response", "tool_calls", "latency_ms", "metadata")
            existing.update({(row[0], row[1]): row for row in found})
        new = []
        for row in rows:
            case_pk = self.case_pk.get(row.case_id)
            if case_pk is None:
                continue  # its case was rejected, or not written because the import already failed
            old = existing.get((case_pk, row.agent_version))
            if old is None:
                new.append((case_pk, row))
                continue
            mine = (row.response, row.tool_calls, row.latency_ms, row.metadata)
            differing = [n for n, a, b in zip(OUTPUT_COMPARED, old[2:], mine, strict=True) if not json_equal(a, b)]
            if differing:
                self.problems.add(row.line, differing[0], output_conflict(row.case_id, row.agent_version, differing))
            else:
                self.counts["outputs_unchanged"] += 1
        if self.problems or not new:
            return
        Output.objects.bulk_create(
            [
                Output(
                    case_id=case_pk,
                    agent_version=r.agent_version,
                    response=r.response,
                    tool_calls=r.tool_calls,
                    latency_ms=r.latency_ms,
                    metadata=r.metadata,
                )
                for case_pk, r in new
            ],
            batch_size=BULK_BATCH,
        )
        self.counts["outputs_created"] += len(new)


class CopyWriter:
    """PostgreSQL path: COPY each batch into temporary staging tables, then compare and insert in SQL.

    The batches go to the database from a second thread, on the same connection and so inside the same
    transaction: while PostgreSQL ingests, indexes and checks one batch, Python parses the next. On a
    machine with two cores that overlap is most of the speed.
    """

    def __init__(self, eval_set: EvalSet, problems: Problems) -> None:
        self.eval_set = eval_set
        self.problems = problems
        suffix = uuid.uuid4().hex[:12]
        self.case_stage = f"icewater_stage_case_{suffix}"
        self.output_stage = f"icewater_stage_output_{suffix}"
        self.cases: list[tuple] = []
        self.outputs: list[tuple] = []
        self.counts = dict.fromkeys(("cases_created", "cases_unchanged", "outputs_created", "outputs_unchanged"), 0)
        self.rejected_cases: set[str] = set()
        self.case_pk: dict[str, int] = {}
        self.eval_set_had_cases = Case.objects.filter(eval_set=eval_set).exists()
        connection.ensure_connection()
        # The raw psycopg connection: Django's wrapper is per thread, psycopg's connection is thread-safe,
        # and the transaction (begun by the caller's atomic block) belongs to the connection.
        self.raw = connection.connection
        with self.raw.cursor() as cur:
            # ON COMMIT DROP covers the normal case; finish() drops them too, because inside an outer
            # transaction (tests, or a caller's atomic block) the commit may come much later.
            cur.execute(
                f"CREATE TEMP TABLE {self.case_stage} (line integer, case_id text, input text, reference text, "
                "metadata jsonb, compare_metadata boolean) ON COMMIT DROP"
            )
            cur.execute(
                f"CREATE TEMP TABLE {self.output_stage} (line integer, case_id text, agent_version text, "
                "response text, tool_calls jsonb, latency_ms integer, metadata jsonb) ON COMMIT DROP"
            )
        # Two batches in flight at most: bounded memory, and enough to keep both cores busy.
        self.queue: queue.Queue = queue.Queue(maxsize=2)
        self.failure: BaseException | None = None
        self.stopping = False
        self.worker = threading.Thread(target=self._work, name="icewater-import-copy", daemon=True)
        self.worker.start()

    def add_case(self, row: CaseRow) -> None:
        self.cases.append((row.line, row.case_id, row.input, row.reference, row.metadata_json, row.compare_metadata))
        if len(self.cases) >= COPY_BATCH:
            self._send()

    def add_output(self, row: OutputRow) -> None:
        self.outputs.append(
            (
                row.line,
                row.case_id,
                row.agent_version,
                row.response,
                row.tool_calls_json,
                row.latency_ms,
                row.metadata_json,
            )
        )
        if len(self.outputs) >= COPY_BATCH:
            self._send()

    def _send(self) -> None:
        if self.failure is not None:
            raise self.failure
        self.queue.put((self.cases, self.outputs))
        self.cases, self.outputs = [], []

    def _work(self) -> None:
        try:
            while (batch := self.queue.get()) is not None:
                if not self.stopping:
                    self._load(*batch)
        except BaseException as exc:  # handed to the parsing thread, which raises it
            self.failure = exc
            while self.queue.get() is not None:  # keep the producer from blocking on a full queue
                pass

    def finish(self) -> dict[str, int]:
        if self.cases or self.outputs:
            self._send()
        self.queue.put(None)
        self.worker.join()
        if self.failure is not None:
            raise self.failure
        with self.raw.cursor() as cur:
            cur.execute(f"DROP TABLE {self.case_stage}, {self.output_stage}")
        return self.counts

    def abort(self) -> None:
        """The import failed in the parsing thread: stop the loader before the transaction is rolled back."""
        self.stopping = True
        if self.worker.is_alive():
            self.queue.put(None)
            self.worker.join()

    def _copy(self, cur, table: str, columns: str, rows: list[tuple]) -> None:
        with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def _load(self, cases: list[tuple], outputs: list[tuple]) -> None:
        # The SQL below interpolates only table names: the models' own and the staging tables named
        # in __init__ from a random hex suffix; every value goes in as a parameter.
        case_table, output_table = Case._meta.db_table, Output._meta.db_table
        es = self.eval_set.pk
        if not self.eval_set_had_cases:
            self._load_new(cases, outputs, case_table, output_table, es)
            return
        with self.raw.cursor() as cur:
            self._copy(cur, self.case_stage, "line, case_id, input, reference, metadata, compare_metadata", cases)
            columns = "line, case_id, agent_version, response, tool_calls, latency_ms, metadata"
            self._copy(cur, self.output_stage, columns, outputs)
            matched_cases, matched_outputs = self._compare(cur, case_table, output_table, es)
            if not self.problems and matched_cases < len(cases):
                cur.execute(
                    f"""INSERT INTO {case_table} (eval_set_id, case_id, input, reference, metadata)
                        SELECT %s, case_id, input, reference, metadata FROM {self.case_stage}
                        ON CONFLICT (eval_set_id, case_id) DO NOTHING""",  # noqa: S608
                    [es],
                )
                self.counts["cases_created"] += cur.rowcount
            if not self.problems and matched_outputs < len(outputs):  # a re-import matches every row
                cur.execute(
                    f"""INSERT INTO {output_table} (case_id, agent_version, response, tool_calls, latency_ms, metadata)
                        SELECT c.id, s.agent_version, s.response, s.tool_calls, s.latency_ms, s.metadata
                        FROM {self.output_stage} s
                        CROSS JOIN LATERAL (SELECT id FROM {case_table}
                                            WHERE eval_set_id = %s AND case_id = s.case_id LIMIT 1) c
                        ON CONFLICT (case_id, agent_version) DO NOTHING""",  # noqa: S608
                    [es],
                )
                self.counts["outputs_created"] += cur.rowcount
            cur.execute(f"TRUNCATE {self.case_stage}, {self.output_stage}")

    def _load_new(self, cases: list[tuple], outputs: list[tuple], case_table: str, output_table: str, es: int) -> None:
        """An eval set that had no cases: nothing to compare with, so COPY straight into the tables.

        feed() already made every case_id and (case_id, agent_version) of the file unique, and the
        eval set row is locked, so no row can conflict. Outputs need their case's id: one indexed
        lookup per batch of cases.
        """
        if self.problems:
            return  # the import will be rolled back: writing more is wasted work
        with self.raw.cursor() as cur:
            if cases:
                columns = "eval_set_id, case_id, input, reference, metadata"
                self._copy(cur, case_table, columns, [(es, c[1], c[2], c[3], c[4]) for c in cases])
                cur.execute(
                    f"SELECT case_id, id FROM {case_table} WHERE eval_set_id = %s AND case_id = ANY(%s)",  # noqa: S608
                    [es, [c[1] for c in cases]],
                )
                self.case_pk.update(cur.fetchall())
                self.counts["cases_created"] += len(cases)
            if outputs:
                case_pk = self.case_pk
                columns = "case_id, agent_version, response, tool_calls, latency_ms, metadata"
                self._copy(cur, output_table, columns, [(case_pk[o[1]], *o[2:]) for o in outputs])
                self.counts["outputs_created"] += len(outputs)

    def _compare(self, cur, case_table: str, output_table: str, es: int) -> tuple[int, int]:
        """Problems for staged rows that exist with other content; count the identical ones.

        Returns how many staged cases and outputs already exist (identical or not).

        LATERAL ... LIMIT 1 makes each staged row one index lookup: the tables grow during the
        import and their statistics lag, and a hash join would scan the whole table every batch.
        """
        cur.execute(
            f"""SELECT s.line, s.case_id, c.input IS DISTINCT FROM s.input,
                       c.reference IS DISTINCT FROM s.reference,
                       s.compare_metadata AND c.metadata IS DISTINCT FROM s.metadata
                FROM {self.case_stage} s
                CROSS JOIN LATERAL (SELECT input, reference, metadata FROM {case_table}
                                    WHERE eval_set_id = %s AND case_id = s.case_id LIMIT 1) c
                ORDER BY s.line""",  # noqa: S608
            [es],
        )
        found = cur.fetchall()
        matched_cases = len(found)
        for line, case_id, *flags in found:
            differing = [name for name, flag in zip(CASE_COMPARED, flags, strict=True) if flag]
            if differing:
                self.rejected_cases.add(case_id)
                self.problems.add(line, differing[0], case_conflict(case_id, self.eval_set.name, differing))
            else:
                self.counts["cases_unchanged"] += 1
        cur.execute(
            f"""SELECT s.line, s.case_id, s.agent_version, o.response IS DISTINCT FROM s.response,
                       o.tool_calls IS DISTINCT FROM s.tool_calls, o.latency_ms IS DISTINCT FROM s.latency_ms,
                       o.metadata IS DISTINCT FROM s.metadata
                FROM {self.output_stage} s
                CROSS JOIN LATERAL (SELECT o.response, o.tool_calls, o.latency_ms, o.metadata
                                    FROM {case_table} c JOIN {output_table} o ON o.case_id = c.id
                                    WHERE c.eval_set_id = %s AND c.case_id = s.case_id
                                      AND o.agent_version = s.agent_version LIMIT 1) o
                ORDER BY s.line""",  # noqa: S608
            [es],
        )
        found = cur.fetchall()
        for line, case_id, agent_version, *flags in found:
            if case_id in self.rejected_cases:
                continue  # its case was refused; the portable path does not compare these either
            differing = [name for name, flag in zip(OUTPUT_COMPARED, flags, strict=True) if flag]
            if differing:
                self.problems.add(line, differing[0], output_conflict(case_id, agent_version, differing))
            else:
                self.counts["outputs_unchanged"] += 1
        return matched_cases, len(found)
