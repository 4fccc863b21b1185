"""Real Inspect AI eval logs for the tests, written by inspect_ai itself with its mock model (no network).

A sample is stated as a dict: {"id", "input", "target", "response"} plus optionally
"tool" (name, args, result) for one tool call before the answer, "grade" (what the mock
grader of model_graded_qa answers: "C", "I", ...) and "scores" ({scorer name: value} for
`fixed_scorer`s). The mock model answers by looking the sample up from the conversation,
so the samples may run in any order.

inspect_ai counts tokens with tiktoken, which downloads its encoding on first use; the
`offline` fixture replaces the counter (a public method of inspect_ai.model.ModelAPI) with
the word count users get from `manage.py inspect_eval` (formats/inspect_offline.py) and
makes any other use of tiktoken fail at once instead of reaching for the network. That fixture and
`refund_logs` (REFUND_SAMPLES written once per module) are in tests/conftest.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

INSPECT_MODEL = "mockllm/model"


def go_offline(mp: pytest.MonkeyPatch) -> None:
    import tiktoken
    from inspect_ai.model import ModelAPI

    from formats.inspect_offline import count_words

    def no_download(*args, **kwargs):
        raise AssertionError("tiktoken was asked for an encoding: the tests must not need one")

    mp.setattr(ModelAPI, "count_text_tokens", count_words)
    mp.setattr(tiktoken, "get_encoding", no_download)
    mp.setattr(tiktoken, "encoding_for_model", no_download)


def _spec_for(samples: list[dict], text: str) -> dict:
    for spec in samples:
        if spec["input"] in text:
            return spec
    raise AssertionError(f"no sample for {text[:80]!r}")


def agent_model(samples: list[dict]):
    from inspect_ai.model import ModelOutput, get_model

    def answer(messages, tools, tool_choice, config):
        spec = _spec_for(samples, messages[0].text)
        called = any(m.role == "tool" for m in messages)
        if spec.get("tool") and not called:
            name, args, _ = spec["tool"]
            return ModelOutput.for_tool_call(INSPECT_MODEL, name, args)
        return ModelOutput.from_content(INSPECT_MODEL, spec["response"])

    return get_model(INSPECT_MODEL, custom_outputs=answer)


def grader_model(samples: list[dict]):
    from inspect_ai.model import ModelOutput, get_model

    def grade(messages, tools, tool_choice, config):
        prompt = messages[0].text
        spec = _spec_for(samples, prompt.split("[Task]:", 1)[1])
        return ModelOutput.from_content(INSPECT_MODEL, f"Checked the amount. GRADE: {spec['grade']}")

    return get_model(INSPECT_MODEL, custom_outputs=grade)


def fixed_scorer(name: str, samples: list[dict]):
    """A scorer called `name` whose value for each sample is spec["scores"][name] (missing: no score)."""
    from inspect_ai.scorer import Score, accuracy, scorer

    @scorer(metrics=[accuracy()], name=name)
    def make():
        async def score(state, target):
            spec = _spec_for(samples, state.input_text)
            if name not in spec.get("scores", {}):
                return None
            return Score(value=spec["scores"][name], explanation=f"{name} looked at it")

        return score

    return make()


def tool_for(samples: list[dict]):
    from inspect_ai.tool import tool

    results = {spec["tool"][0]: spec["tool"][2] for spec in samples if spec.get("tool")}

    @tool(name="lookup_order")
    def lookup_order():
        async def execute(order_id: str):
            """Look up an order.

            Args:
                order_id: The order's id.
            """
            return results["lookup_order"]

        return execute

    return lookup_order()


def write_log(
    log_dir: Path,
    samples: list[dict],
    *,
    fmt: str = "eval",
    model_graded: bool = True,
    scorers: tuple[str, ...] = (),
    task_name: str = "refunds",
) -> Path:
    """Run a task over the samples with the mock model and return the path of the log inspect_ai wrote."""
    from inspect_ai import Task, task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate, use_tools

    all_scorers = [model_graded_qa(model=grader_model(samples))] if model_graded else []
    all_scorers += [fixed_scorer(name, samples) for name in scorers]

    @task(name=task_name)
    def refunds():
        return Task(
            dataset=[Sample(id=s["id"], input=s["input"], target=s["target"]) for s in samples],
            solver=[use_tools(tool_for(samples)), generate()],
            scorer=all_scorers,
        )

    logs = inspect_eval(
        refunds(), model=agent_model(samples), log_dir=str(log_dir), log_format=fmt, display="none", log_level="error"
    )
    assert logs[0].status == "success", logs[0].error
    return Path(logs[0].location)


REFUND_SAMPLES = [
    {
        "id": "r-001",
        "input": "I was charged twice for order 1234. Can I get a refund?",
        "target": "Refund $40.00 for the duplicate charge.",
        "tool": ("lookup_order", {"order_id": "1234"}, "order 1234: duplicate charge of $40.00"),
        "response": "I have refunded the duplicate charge of $40.00; it arrives within 5 business days.",
        "grade": "C",
    },
    {
        "id": "r-002",
        "input": "My parcel for order 5678 never arrived.",
        "target": "Refund $25.50 after the carrier confirms the loss.",
        "response": "Refund of $45.00 issued.",
        "grade": "I",
    },
    {
        "id": "r-003",
        "input": "Can I return shoes after 60 days?",
        "target": "No: the return window is 30 days.",
        "response": "Yes, any time.",
        "grade": "I",
    },
]
