"""The hand-worked three-annotator table of tests/calibration/report/test_annotator_agreement.py (its docstring works
it out),
as frames for the pure math and in the database for the page."""

from __future__ import annotations

from evals.models import Role

from .factories import adjudicate, annotate, make_eval_set, make_output, make_rubric_version, make_user
from .factories import annotator as annotator_named

A, B, C = 1, 2, 3
TABLE = {
    A: "PPPFFPFPFP",
    B: "PPPFFFPPFF",
    C: "FFPPFPFFPF",
}
WORDS = {"P": "PASS", "F": "FAIL"}
# The reviewer's decisions on A and B's three splits, for the flag example.
ADJUDICATED = {6: "PASS", 7: "FAIL", 10: "FAIL"}


def build_world(blocks: int = 1, extra_annotators: int = 0):
    """The table in the database: annotators ann-a, ann-b, ann-c, the reviewer's three decisions per block,
    and `extra_annotators` more people who each label every item PASS (for the query count)."""
    es = make_eval_set("people")
    rv = make_rubric_version("refund", "1")
    key = rv.criteria.order_by("order").first().key
    people = {who: annotator_named(f"ann-{name}") for who, name in ((A, "a"), (B, "b"), (C, "c"))}
    extras = [annotator_named(f"extra-{i}") for i in range(extra_annotators)]
    rey = make_user("rey", Role.REVIEWER)
    for b in range(blocks):
        for i in range(1, 11):
            output = make_output(es, case_id=f"b{b}-i{i}")
            for slot, (who, user) in enumerate(people.items(), start=1):
                annotate(output, rv, user, slot, {key: WORDS[TABLE[who][i - 1]]})
            for slot, user in enumerate(extras, start=4):
                annotate(output, rv, user, slot, {key: "PASS"})
            if i in ADJUDICATED:
                adjudicate(output, rv, key, ADJUDICATED[i], rey)
    return es, rv, key
