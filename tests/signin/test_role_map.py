"""The role map (signin/role_map.py), pure: parsing ICEWATER_OIDC_ROLE_MAP and what a person's groups give."""

from __future__ import annotations

import pytest

from signin.role_map import Grant, groups_from_claim, memberships_for, parse_role_map

MAP = "refund-annotators=refund-support:annotator, refund-leads=refund-support:lead,qa=search-team:reviewer"


def test_a_map_parses_into_its_entries_in_order_with_spaces_and_empty_entries_ignored():
    assert parse_role_map(MAP + ",,") == (
        Grant("refund-annotators", "refund-support", "annotator"),
        Grant("refund-leads", "refund-support", "lead"),
        Grant("qa", "search-team", "reviewer"),
    )
    assert parse_role_map("") == ()


def test_a_group_may_name_several_workspaces_and_several_groups_one():
    grants = parse_role_map("eng=a:lead,eng=b:annotator,ops=a:reviewer")
    assert memberships_for(["eng"], grants) == {"a": "lead", "b": "annotator"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("refund-leads", "is not GROUP=WORKSPACE:ROLE"),
        ("refund-leads=refund-support", "is not GROUP=WORKSPACE:ROLE"),
        ("=refund-support:lead", "is not GROUP=WORKSPACE:ROLE"),
        ("refund-leads=:lead", "is not GROUP=WORKSPACE:ROLE"),
        ("refund-leads=refund-support:", "is not GROUP=WORKSPACE:ROLE"),
        ("refund-leads=refund-support:admin", "role 'admin' is not one of annotator, reviewer, lead"),
        ("refund-leads=refund support:lead", "'refund support' is not a workspace slug"),
        ("refund-leads=a:lead,refund-leads=a:annotator", "group 'refund-leads' is given two roles in workspace 'a'"),
    ],
)
def test_a_bad_entry_is_named_in_one_line(text, message):
    with pytest.raises(ValueError) as raised:
        parse_role_map(text)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_the_same_entry_twice_is_harmless():
    assert memberships_for(["x"], parse_role_map("x=a:lead,x=a:lead")) == {"a": "lead"}


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        # Worked by hand from MAP: each group's workspace and role; the highest role per workspace.
        (["refund-annotators"], {"refund-support": "annotator"}),
        (["refund-annotators", "refund-leads"], {"refund-support": "lead"}),
        (["refund-leads", "refund-annotators"], {"refund-support": "lead"}),
        (["qa", "refund-annotators", "canteen"], {"refund-support": "annotator", "search-team": "reviewer"}),
        (["canteen", "staff"], {}),
        ([], {}),
        # Group names match exactly: no case folding, no prefixes.
        (["Refund-Annotators", "refund"], {}),
    ],
)
def test_memberships_are_what_the_groups_give_the_highest_role_per_workspace(groups, expected):
    assert memberships_for(groups, parse_role_map(MAP)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(["a", "b"], ["a", "b"]), ("a", ["a"]), ([], []), (None, None), ([1, "a"], None), ({"a": 1}, None)],
)
def test_the_groups_claim_is_a_list_of_strings_or_one_string(value, expected):
    assert groups_from_claim(value) == expected
