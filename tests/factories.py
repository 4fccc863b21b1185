"""Plain-Python builders for test data. Keep them boring: explicit arguments, sensible defaults."""

from __future__ import annotations

from itertools import count

from django.http import HttpRequest

from evals.models import Case, Criterion, EvalSet, Output, Role, Rubric, RubricVersion, User, rubric_content_hash

_seq = count(1)

DEFAULT_CRITERIA = [
    {
        "key": "correct_amount",
        "definition": "The refund amount stated matches the amount in the reference.",
        "pass_example": "Your refund of $40.00 is on its way.",
        "fail_example": "Your refund of $45.00 is on its way (reference says $40.00).",
    },
    {
        "key": "next_step",
        "definition": "The customer is told what happens next and when.",
        "pass_example": "You will see the money within 5 business days.",
        "fail_example": "Refund processed.",
    },
]


def make_user(username: str | None = None, role: str = Role.ANNOTATOR, password: str = "pw-for-tests-1") -> User:
    user = User(username=username or f"user{next(_seq)}", role=role)
    user.set_password(password)
    user.save()
    return user


def password_login(client, username: str, password: str = "pw-for-tests-1") -> bool:
    """client.login with a request: django-axes (login throttling) refuses to judge an attempt without one.

    The address is the test client's own, so an attempt here counts where the client's requests do.
    """
    request = HttpRequest()
    request.META["REMOTE_ADDR"] = "127.0.0.1"
    return client.login(request=request, username=username, password=password)


def make_eval_set(name: str | None = None) -> EvalSet:
    return EvalSet.objects.create(name=name or f"set-{next(_seq)}")


def make_rubric_version(
    name: str | None = None, version: str = "1", criteria: list[dict] | None = None, instruction: str = "Grade it."
) -> RubricVersion:
    criteria = DEFAULT_CRITERIA if criteria is None else criteria
    rubric, _ = Rubric.objects.get_or_create(name=name or f"rubric-{next(_seq)}")
    rv = RubricVersion.objects.create(
        rubric=rubric,
        version=version,
        instruction=instruction,
        content_hash=rubric_content_hash(instruction, criteria),
    )
    for i, c in enumerate(criteria):
        Criterion.objects.create(rubric_version=rv, order=i, **c)
    return rv


def make_output(
    eval_set: EvalSet,
    case_id: str | None = None,
    agent_version: str = "default",
    input: str = "I was charged twice for order 1234. Can I get a refund?",
    reference: str = "Refund $40.00 for the duplicate charge.",
    response: str = "I have issued a refund of $40.00. You will see it within 5 business days.",
    tool_calls: list | None = None,
) -> Output:
    case, _ = Case.objects.get_or_create(
        eval_set=eval_set, case_id=case_id or f"case-{next(_seq)}", defaults={"input": input, "reference": reference}
    )
    if tool_calls is None:
        tool_calls = [{"name": "lookup_order", "args": {"order_id": "1234"}, "response": {"duplicate_charge": 40.0}}]
    return Output.objects.create(case=case, agent_version=agent_version, response=response, tool_calls=tool_calls)
