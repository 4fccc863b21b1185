"""A query the labeling page and its save run on every request, compiled to SQL once per process, then run with
each request's values.

Why: the ORM compiles a queryset to SQL anew on every evaluation, and for the annotation with everything around it
(a six-table join with a subquery and a row lock) that compilation was a third of a save's CPU: 100 annotators at
once on four workers spent more time building the same SQL text than PostgreSQL spent answering it (docs/labeling.md,
Load). The SQL only differs by its values, so it is compiled once, with stand-in values, and the rows are turned
into model instances by Django's own pieces (the compiler's column map, converters and related populators), as
QuerySet iteration does.

Only filter values can be swapped: the stand-ins are integers no row holds, each of which must reach the SQL as one
parameter (checked when compiling: a value Django folds into the SQL text fails loudly, not silently).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, models
from django.db.models.query import get_related_populators
from django.db.models.sql.constants import MULTI
from django.db.transaction import TransactionManagementError

M = TypeVar("M")  # the model, or the model with its annotations (django_stubs_ext.WithAnnotations)

# Stand-in values: negative integers (no id is one), one per named value, so each is found among the parameters;
# within a 32-bit integer column's range, since Django folds an out-of-range comparison into the SQL text.
_STAND_IN_BASE = -(2**31) + 1


@dataclass(frozen=True)
class _Compiled:
    query: Any  # django.db.models.sql.Query: what get_compiler is asked for on each run
    sql: str
    params: tuple
    slots: dict[str, int]  # value name -> its position among params
    select: Any
    klass_info: Any
    annotation_col_map: Any
    col_count: int
    has_extra_select: bool
    for_update: bool


class CompiledQuery(Generic[M]):
    """`build(**values)` makes the queryset; `rows(**values)` runs its SQL, compiled on the first call per database
    alias, with these values. Every value must be an integer compared by equality (an id)."""

    def __init__(self, build: Callable[..., models.QuerySet[Any]], *names: str):
        self.build, self.names = build, names
        self._compiled: dict[str, _Compiled] = {}  # per database alias

    def _compile(self, using: str) -> _Compiled:
        """The SQL with stand-in values, and where each value goes (a row lock compiles inside a transaction only,
        as Django checks: rows() is then in one)."""
        stand_ins = {name: _STAND_IN_BASE + i for i, name in enumerate(self.names)}
        queryset = self.build(**stand_ins)
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        slots = {}
        for name, value in stand_ins.items():
            found = [i for i, p in enumerate(params) if p == value]
            if len(found) != 1:
                raise ValueError(f"{name!r} reaches the compiled SQL {len(found)} times, not once as a parameter")
            slots[name] = found[0]
        compiled = _Compiled(
            query=queryset.query,
            sql=sql,
            params=tuple(params),
            slots=slots,
            select=compiler.select,
            klass_info=compiler.klass_info,
            annotation_col_map=compiler.annotation_col_map,
            col_count=compiler.col_count,
            has_extra_select=compiler.has_extra_select,
            for_update=bool(queryset.query.select_for_update),
        )
        self._compiled[using] = compiled
        return compiled

    def rows(self, using: str = "default", **values: int) -> list[M]:
        """The model instances the queryset would give for `values`, with its select_related objects and
        annotations, as iterating the queryset would."""
        compiled = self._compiled.get(using) or self._compile(using)
        if compiled.for_update and connections[using].get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(compiled.params)
        for name, position in compiled.slots.items():
            params[position] = int(values[name])
        compiler = compiled.query.get_compiler(using=using)
        # The state as_sql would set up, then as_sql itself answering with the SQL compiled once.
        compiler.select, compiler.klass_info = compiled.select, compiled.klass_info
        compiler.annotation_col_map, compiler.col_count = compiled.annotation_col_map, compiled.col_count
        compiler.has_extra_select = compiled.has_extra_select
        compiler.as_sql = lambda *args, **kwargs: (compiled.sql, params)
        # What django.db.models.query.ModelIterable does with a compiler's rows (no known related objects here).
        klass_info, select = compiled.klass_info, compiled.select
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        init_list = [field[0].target.attname for field in select[start:end]]
        populators = get_related_populators(klass_info, select, using)  # type: ignore[call-arg]  # 5.2's signature
        found: list[M] = []
        for row in compiler.results_iter(compiler.execute_sql(MULTI)):
            obj = klass_info["model"].from_db(using, init_list, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for attr, position in (compiled.annotation_col_map or {}).items():
                setattr(obj, attr, row[position])
            found.append(obj)
        return found
