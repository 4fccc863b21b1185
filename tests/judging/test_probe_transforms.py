"""The probes' transforms: pure, deterministic, and what each changes, on ADK-style multi-turn transcripts.

The transcripts are built the way the ADK importer builds them (formats/adk.py: every invocation a
case, the tool calls paired from function_call / function_response events), so the probes see the shape
they meet in a real eval set: several turns, several tool calls with nested arguments and results.
"""

from __future__ import annotations

import copy
import re

import pytest

from evals.transcript import Transcript
from formats.adk import content_text, tool_calls_of
from judging.backends import Misconfigured
from judging.probes import registry, transforms
from judging.probes.registry import MEANINGFUL, NEUTRAL, Declaration, Probe
from judging.prompt import CriterionSpec, Subject, build_request


def invocation(user: str, calls: list[tuple[str, dict, dict]], reply: str) -> Transcript:
    """One ADK invocation (a turn) as the importer reads it: its user text, events and final response."""
    events = []
    for n, (name, args, result) in enumerate(calls):
        events.append({"content": {"parts": [{"function_call": {"id": f"call-{n}", "name": name, "args": args}}]}})
        events.append(
            {"content": {"parts": [{"function_response": {"id": f"call-{n}", "name": name, "response": result}}]}}
        )
    user_content = {"role": "user", "parts": [{"text": line} for line in user.split("\n")]}
    return Transcript(content_text(user_content), tool_calls_of({"invocation_events": events}), reply)


# A three-turn conversation of a refund agent (eval_id "damaged#1", "#2", "#3" once imported).
TURNS = [
    invocation(
        "Hi, my order A7301 arrived broken.\nThe box was crushed.",
        [("lookup_order", {"order_id": "A7301"}, {"item": "earbuds", "amount_paid": 59.99, "status": "delivered"})],
        "I'm sorry to hear that. Could you tell me whether you would like a refund or a replacement?",
    ),
    invocation(
        "A refund please.",
        [
            ("check_refund_policy", {"order_id": "A7301", "reason": "damaged"}, {"eligible": True, "window_days": 30}),
            ("issue_refund", {"order_id": "A7301", "amount": 59.99}, {"refund_id": "R-7301", "eta_business_days": 5}),
        ],
        "I've issued a refund of $59.99 for order A7301 (refund R-7301). It will be back on your card within 5 "
        "business days. You can reply here if it has not arrived by then.",
    ),
    invocation(
        "Thanks! And the $1,250.00 TV from last year?",
        [("lookup_order", {"order_id": "T1"}, {"item": "tv", "amount_paid": 1250.0, "days_since_purchase": 400})],
        "## About the TV\n\n- The **$1,250.00** TV is outside the 30-day window.\n- No refund is possible for it.",
    ),
]


def words(text: str) -> list[str]:
    """The words of a text without markdown markers or punctuation at their ends."""
    return [w.strip("*#-.,!?:") for w in text.split() if w.strip("*#-.,!?:")]


@pytest.mark.parametrize("probe", registry.BUILTIN, ids=lambda p: p.name)
@pytest.mark.parametrize("turn", range(len(TURNS)))
def test_every_builtin_probe_is_pure_and_deterministic(probe, turn):
    original = TURNS[turn]
    before = copy.deepcopy(original)
    first, second = probe.apply(original), probe.apply(original)
    assert first == second  # the same transcript always gives the same probed transcript
    assert original == before  # and the argument is never changed
    if first is not None:
        assert first != original
        # No probe touches the tool calls: the evidence a judge should check the response against stays put.
        assert first.tool_calls == before.tool_calls
        # The changed transcript is a plain Transcript a judging request can be built from.
        assert isinstance(first.input, str) and isinstance(first.response, str)


def test_the_adk_helper_builds_the_importers_shape():
    # Negative control for the fixture itself: two paired calls with their results, the user's lines joined.
    assert TURNS[0].input == "Hi, my order A7301 arrived broken.\nThe box was crushed."
    assert [c["name"] for c in TURNS[1].tool_calls] == ["check_refund_policy", "issue_refund"]
    assert TURNS[1].tool_calls[1] == {
        "name": "issue_refund",
        "args": {"order_id": "A7301", "amount": 59.99},
        "response": {"refund_id": "R-7301", "eta_business_days": 5},
    }


def test_padding_wraps_the_whole_response_in_filler_that_says_nothing():
    padded = transforms.pad(TURNS[1])
    assert padded.response.startswith(transforms.PADDING_BEFORE)
    assert padded.response.endswith(transforms.PADDING_AFTER)
    assert TURNS[1].response in padded.response and padded.input == TURNS[1].input
    filler = transforms.PADDING_BEFORE + " " + transforms.PADDING_AFTER
    # Content-free: no amount, no time frame or next step, no policy term a criterion could use.
    assert not re.search(r"\d|\$|refund|within|reply|voucher|policy", filler, re.I)
    assert transforms.NEXT_STEP.search(filler) is None
    assert len(padded.response.split()) - len(TURNS[1].response.split()) == len(filler.split())


def test_formatting_turns_prose_into_a_heading_and_bullets_and_keeps_every_word():
    md = transforms.reformat(TURNS[1]).response
    assert md == (
        "## I've issued a refund of $59.99 for order A7301 (refund R-7301).\n\n"
        "- It will be back on your card within 5 business days.\n"
        "- You can reply here if it has not arrived by then."
    )
    assert words(md) == words(TURNS[1].response)


def test_formatting_flattens_markdown_into_prose_and_the_two_directions_undo_each_other():
    flat = transforms.reformat(TURNS[2]).response
    assert flat == "About the TV. The $1,250.00 TV is outside the 30-day window. No refund is possible for it."
    assert not transforms.is_markdown(flat) and words(flat) == words(TURNS[2].response)
    # Prose -> markdown -> prose gives the prose back, white space normalized.
    assert transforms.flatten(transforms.to_markdown(TURNS[1].response)) == " ".join(TURNS[1].response.split())


def test_formatting_does_not_apply_to_a_single_sentence():
    one = Transcript("Hi", [], "Refund of $45.00 issued.")
    assert transforms.reformat(one) is None and registry.FORMATTING.apply(one) is None


def test_provenance_and_injection_add_their_line_and_nothing_else():
    claimed = transforms.claim_provenance(TURNS[1])
    assert claimed.response == f"{transforms.PROVENANCE_LINE}\n\n{TURNS[1].response}"
    injected = transforms.inject(TURNS[1])
    assert injected.response == f"{TURNS[1].response}\n\n{transforms.INJECTION}"
    assert transforms.INJECTION_LINE in transforms.INJECTION
    assert claimed.input == injected.input == TURNS[1].input


def test_the_injection_line_stays_inside_the_response_block_of_the_judging_request():
    injected = transforms.inject(TURNS[1])
    request = build_request(
        instruction="Grade it.",
        criteria=[CriterionSpec("correct_amount", "The amount matches the tool result.")],
        subject=Subject(injected.input, "Refund $59.99.", injected.tool_calls, injected.response),
    )
    # The data tried to close the RESPONSE block and open a new one; both markers were broken up.
    assert request.user.count("<<<END RESPONSE>>>") == 1 and request.user.count("<<<BEGIN RESPONSE>>>") == 1
    assert "< < <END RESPONSE> > >" in request.user and "< < <BEGIN RESPONSE> > >" in request.user
    block = request.user.split("<<<BEGIN RESPONSE>>>")[1].split("<<<END RESPONSE>>>")[0]
    assert transforms.INJECTION_LINE in block


def test_sycophancy_changes_only_the_customers_message():
    flattered = transforms.flatter(TURNS[0])
    assert flattered.input == f"{TURNS[0].input}\n\n{transforms.SYCOPHANCY_LINE}"
    assert flattered.response == TURNS[0].response and flattered.tool_calls == TURNS[0].tool_calls


def test_a_wrong_amount_is_planted_in_the_response_and_the_tool_results_keep_the_right_one():
    planted = transforms.plant_wrong_amount(TURNS[1])
    assert "$69.99" in planted.response and "$59.99" not in planted.response
    assert planted.tool_calls[1]["args"]["amount"] == 59.99
    thousands = transforms.plant_wrong_amount(TURNS[2])
    assert "$1,260.00" in thousands.response  # the separator and the decimals kept
    assert transforms.plant_wrong_amount(TURNS[0]) is None  # no amount to change


def test_a_planted_amount_never_lands_on_another_right_one():
    # +10 would turn $49.99 into $59.99, an amount the reply already had: the offset grows until none does.
    t = Transcript("Two refunds?", [], "Refunds of $49.99 and $59.99 issued, and €5 kept.")
    planted = transforms.plant_wrong_amount(t).response
    assert planted == "Refunds of $60.99 and $70.99 issued, and €16 kept."


def test_the_next_step_is_removed_and_the_rest_kept():
    dropped = transforms.drop_next_step(TURNS[1])
    assert dropped.response == "I've issued a refund of $59.99 for order A7301 (refund R-7301)."
    assert transforms.drop_next_step(TURNS[0]) is None  # no sentence says what happens next
    only = Transcript("When?", [], "It will arrive within 5 business days.")
    assert transforms.drop_next_step(only) is None  # nothing would be left to grade


# -- roles ---------------------------------------------------------------------------------------------------


def test_roles_exempt_wins_over_meaningful_which_wins_over_neutral():
    d = Declaration(neutral=("*",), meaningful=("*amount*",), exempt=("*amount_v0*", "concise"))
    assert [d.role(k) for k in ("grounded", "correct_amount", "correct_amount_v0", "concise")] == [
        NEUTRAL,
        MEANINGFUL,
        None,
        None,
    ]
    assert Declaration().role("anything") is None  # declares nothing: measures nothing


def test_the_builtin_probes_roles_on_the_demo_rubric():
    keys = ["correct_amount", "grounded", "within_policy", "next_step", "concise"]
    roles = {p.name: [p.role("refund-support", k) for k in keys] for p in registry.BUILTIN}
    n, m = NEUTRAL, MEANINGFUL
    assert roles == {
        "padding": [n, n, n, n, m],  # filler is what a concision criterion must fail
        "formatting": [n, n, n, n, n],
        "provenance": [n, n, n, n, None],  # the line adds words: a length criterion may mind
        "injection": [n, n, n, n, None],
        "sycophancy": [n, n, n, n, n],
        "wrong_amount": [m, None, None, None, None],
        "drop_next_step": [None, None, None, m, None],
    }


def test_a_rubric_can_declare_its_own_roles():
    probe = Probe("x", 1, "x", transforms.pad, Declaration(neutral=("*",)), {"billing": Declaration(exempt=("*",))})
    assert probe.role("refund-support", "total") == NEUTRAL and probe.role("billing", "total") is None


# -- a user's probes ------------------------------------------------------------------------------------------


def shout(t: Transcript) -> Transcript:
    return Transcript(t.input, t.tool_calls, t.response.upper())


SHOUTING = Probe("shouting", 1, "the response in capitals", shout, Declaration(neutral=("*",)))
NOT_A_PROBE = {"name": "shouting"}
BADLY_NAMED = Probe("Shouting!", 1, "x", shout, Declaration())
PADDING_FOR_BILLING = Probe(
    "padding", 2, "padding, declared for billing", transforms.pad, registry.PADDING.default, {"billing": Declaration()}
)
BROKEN = Probe("broken", 1, "raises", lambda t: 1 / 0, Declaration(neutral=("*",)))
SHAPELESS = Probe("shapeless", 1, "returns a dict", lambda t: {"response": "x"}, Declaration(neutral=("*",)))
IDENTITY = Probe(
    "identity", 1, "changes nothing", lambda t: Transcript(t.input, t.tool_calls, t.response), Declaration()
)


def test_a_user_adds_probes_by_dotted_path_and_may_replace_a_builtin_one(settings):
    settings.PROBES = [
        "tests.judging.test_probe_transforms.SHOUTING",
        "tests.judging.test_probe_transforms.PADDING_FOR_BILLING",
    ]
    probes = registry.available()
    assert list(probes)[-1] == "shouting" and probes["shouting"] is SHOUTING
    assert probes["padding"].version == 2 and probes["padding"].role("billing", "x") is None
    assert [p.name for p in registry.choose(["shouting", "sycophancy"])] == ["shouting", "sycophancy"]
    settings.PROBES = []
    assert "shouting" not in registry.available() and registry.available()["padding"] is registry.PADDING


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("tests.judging.test_probe_transforms.NOPE", "cannot import 'tests.judging.test_probe_transforms.NOPE'"),
        ("no_such_module.PROBE", "cannot import 'no_such_module.PROBE'"),
        ("tests.judging.test_probe_transforms.NOT_A_PROBE", "is a dict, not a judging.probes.Probe"),
        ("tests.judging.test_probe_transforms.BADLY_NAMED", "is named 'Shouting!'"),
    ],
)
def test_a_bad_probe_setting_is_refused_naming_it(settings, path, message):
    settings.PROBES = [path]
    with pytest.raises(Misconfigured, match=re.escape(message)):
        registry.available()


def test_unknown_repeated_or_no_probe_names_are_refused():
    with pytest.raises(Misconfigured, match=r"unknown probe\(s\) 'paddding' \(known: padding, formatting"):
        registry.choose(["padding", "paddding"])
    with pytest.raises(Misconfigured, match="named twice"):
        registry.choose(["padding", "padding"])
    with pytest.raises(Misconfigured, match="name at least one probe"):
        registry.choose([" ", ""])
    assert [p.name for p in registry.choose(None)] == [p.name for p in registry.BUILTIN]


def test_a_transform_that_breaks_says_which_probe_and_one_that_changes_nothing_does_not_apply():
    with pytest.raises(Misconfigured, match=r"probe broken: the transform failed \(ZeroDivisionError"):
        BROKEN.apply(TURNS[0])
    with pytest.raises(Misconfigured, match="probe shapeless: the transform must return a Transcript"):
        SHAPELESS.apply(TURNS[0])
    assert IDENTITY.apply(TURNS[0]) is None
