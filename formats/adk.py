"""Google ADK eval files: `.evalset.json` (EvalSet) and `.evalset_result.json` (EvalSetResult).

Schemas as in google/adk-python (src/google/adk/evaluation/eval_set.py, eval_case.py,
eval_result.py, eval_metrics.py). ADK's own files use snake_case keys
(`model_dump_json()`), its web API camelCase aliases; both are accepted. ADK
before 1.22 wrote result files as a JSON string holding the JSON text; that is
unwrapped.

Mapping: every invocation (turn) is one case. A single-turn eval case keeps its
eval_id as case_id; a multi-turn one gives `eval_id#invocation_id` (the turn
number when the invocation has no id). The user's text is the input, the
expected final response the reference; in a result file the actual invocation
becomes the output. Per-metric scores are not read here: verdicts belong to
judging (`import_verdicts`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import IO, Any

from pydantic.alias_generators import to_camel as _to_camel

from evals import record_fields as f
from evals.models import Case, EvalSet
from evals.problems import Problems, RecordError, line_of

from .case_records import build_rows
from .readers import Source, load_json_document, read_text

# Where an ADK value came from, for messages: our field -> the ADK field it was read from.
_ADK_FIELD = {
    "case_id": "eval_id",
    "input": "user_content",
    "reference": "final_response",
    "response": "final_response",
    "tool_calls": "intermediate_data",
    "latency_ms": "duration",
}
# An invocation may carry this extra key (ADK keeps extra keys); export_data writes it so that a
# case exported to ADK and imported back keeps its case_id and metadata exactly.
ICEWATER_KEY = "icewater"
to_camel = lru_cache(maxsize=None)(_to_camel)


def _get(obj: Any, key: str) -> Any:
    """obj[key] in snake_case or its camelCase alias; None when absent or obj is not an object."""
    if not isinstance(obj, dict):
        return None
    value = obj.get(key)
    if value is None:
        value = obj.get(to_camel(key))
    return value


def content_text(content: Any) -> str:
    """The text of a genai Content: its text parts joined by newlines, thoughts left out."""
    parts = _get(content, "parts")
    if not isinstance(parts, list):
        return ""
    texts = [
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    ]
    return "\n".join(texts)


def _pair_tool_calls(calls: list, responses: list) -> list[dict]:
    """Tool uses with their responses: by call id where ADK recorded one, else in order per tool name."""
    responses = [r for r in responses if isinstance(r, dict)]
    by_id = {r["id"]: r for r in responses if r.get("id")}
    call_ids = {c.get("id") for c in calls if isinstance(c, dict) and c.get("id")}
    leftovers = [r for r in responses if not (r.get("id") and r.get("id") in call_ids)]
    paired = []
    for call in calls:
        if not isinstance(call, dict):
            paired.append(call)  # build_rows reports it
            continue
        response = by_id.get(call.get("id")) if call.get("id") else None
        if response is None:
            response = next((r for r in leftovers if r.get("name") == call.get("name")), None)
            if response is not None:
                leftovers.remove(response)
        paired.append(
            {"name": call.get("name"), "args": call.get("args") or {}, "response": _get(response, "response")}
        )
    return paired


def tool_calls_of(intermediate: Any) -> list[dict]:
    """IntermediateData (tool_uses + tool_responses) or InvocationEvents (function parts of events)."""
    if not isinstance(intermediate, dict):
        return []
    events = _get(intermediate, "invocation_events")
    if isinstance(events, list):
        calls, responses = [], []
        for event in events:
            for part in _get(_get(event, "content"), "parts") or []:
                if _get(part, "function_call") is not None:
                    calls.append(_get(part, "function_call"))
                if _get(part, "function_response") is not None:
                    responses.append(_get(part, "function_response"))
        return _pair_tool_calls(calls, responses)
    return _pair_tool_calls(_get(intermediate, "tool_uses") or [], _get(intermediate, "tool_responses") or [])


def _expected_tool_uses(intermediate: Any) -> list[dict]:
    return [{"name": c["name"], "args": c["args"]} for c in tool_calls_of(intermediate)]


def _case_values(eval_set_id: str, eval_id: Any, invocation: dict, turn: int, turns: int) -> dict:
    """The case fields of one expected invocation."""
    invocation_id = _get(invocation, "invocation_id") or ""
    extra = invocation.get(ICEWATER_KEY)
    if isinstance(extra, dict) and "case_id" in extra:
        return {
            "case_id": extra["case_id"],
            "input": content_text(_get(invocation, "user_content")),
            "reference": content_text(_get(invocation, "final_response")),
            "metadata": extra.get("metadata"),
        }
    adk = {"eval_set_id": eval_set_id, "eval_id": eval_id, "turn": turn}
    if invocation_id:
        adk["invocation_id"] = invocation_id
    tool_uses = _expected_tool_uses(_get(invocation, "intermediate_data"))
    if tool_uses:
        adk["expected_tool_uses"] = tool_uses
    case_id = eval_id if turns == 1 else f"{eval_id}#{invocation_id or turn}"
    return {
        "case_id": case_id,
        "input": content_text(_get(invocation, "user_content")),
        "reference": content_text(_get(invocation, "final_response")),
        "metadata": {"adk": adk},
    }


def _rows(values: dict, line: int | None, path: str, default_agent_version: str, problems: Problems):
    if not values["input"].strip():
        problems.add(line, f"{path}.user_content", "the user's turn has no text")
        return None
    try:
        return build_rows(values, line, default_agent_version)
    except RecordError as exc:
        adk_field = _ADK_FIELD.get((exc.field or "").split("[")[0], exc.field)
        problems.add(line, f"{path}.{adk_field}", exc.message)
        return None


def _eval_id(value: Any, line: int | None, path: str, problems: Problems) -> str | None:
    try:
        return f.ident(value, "eval_id", 250)
    except RecordError as exc:
        problems.add(line, f"{path}.eval_id", exc.message)
        return None


def _evalset_rows(doc: dict, problems: Problems, default_agent_version: str) -> Iterator[tuple]:
    eval_set_id = str(_get(doc, "eval_set_id") or "")
    eval_cases = _get(doc, "eval_cases")
    if not isinstance(eval_cases, list):
        raise problems.fatal(line_of(doc), "eval_cases", "must be a list of eval cases")
    for ci, eval_case in enumerate(eval_cases):
        path = f"eval_cases[{ci}]"
        line = line_of(eval_case, line_of(eval_cases))
        if not isinstance(eval_case, dict):
            problems.add(line, path, "must be an object (an ADK EvalCase)")
            continue
        eval_id = _eval_id(_get(eval_case, "eval_id"), line, path, problems)
        conversation = _get(eval_case, "conversation")
        if eval_id is None:
            continue
        if conversation is None and _get(eval_case, "conversation_scenario") is not None:
            problems.add(
                line,
                f"{path}.conversation_scenario",
                "this eval case has a user-simulator scenario, not fixed turns; import the .evalset_result.json "
                "of a run instead",
            )
            continue
        if not isinstance(conversation, list) or not conversation:
            problems.add(line, f"{path}.conversation", "must be a non-empty list of invocations")
            continue
        for ti, invocation in enumerate(conversation):
            where = f"{path}.conversation[{ti}]"
            if not isinstance(invocation, dict):
                problems.add(line_of(invocation, line), where, "must be an object (an ADK Invocation)")
                continue
            values = _case_values(eval_set_id, eval_id, invocation, ti + 1, len(conversation))
            rows = _rows(values, line_of(invocation, line), where, default_agent_version, problems)
            if rows:
                yield rows


def _result_rows(doc: dict, problems: Problems, default_agent_version: str) -> Iterator[tuple]:
    result_id = str(_get(doc, "eval_set_result_id") or "")
    eval_set_id = str(_get(doc, "eval_set_id") or "")
    case_results = _get(doc, "eval_case_results")
    if not isinstance(case_results, list):
        raise problems.fatal(line_of(doc), "eval_case_results", "must be a list of eval case results")
    for ci, case_result in enumerate(case_results):
        path = f"eval_case_results[{ci}]"
        line = line_of(case_result, line_of(case_results))
        if not isinstance(case_result, dict):
            problems.add(line, path, "must be an object (an ADK EvalCaseResult)")
            continue
        eval_id = _eval_id(_get(case_result, "eval_id"), line, path, problems)
        per_invocation = _get(case_result, "eval_metric_result_per_invocation")
        if eval_id is None:
            continue
        if not isinstance(per_invocation, list) or not per_invocation:
            problems.add(
                line,
                f"{path}.eval_metric_result_per_invocation",
                "has no invocations, so there is no output to import (did the run fail for this case?)",
            )
            continue
        for ti, entry in enumerate(per_invocation):
            where = f"{path}.eval_metric_result_per_invocation[{ti}]"
            actual = _get(entry, "actual_invocation")
            expected = _get(entry, "expected_invocation")
            if not isinstance(actual, dict):
                problems.add(line_of(entry, line), f"{where}.actual_invocation", "is missing")
                continue
            values = _case_values(
                eval_set_id, eval_id, expected if isinstance(expected, dict) else actual, ti + 1, len(per_invocation)
            )
            if not isinstance(expected, dict):
                values["reference"] = ""  # no expected turn: the actual one must not pose as the reference
            duration = _get(actual, "duration")
            output_metadata = {"adk": {"eval_set_result_id": result_id}}
            if _get(actual, "invocation_id"):
                output_metadata["adk"]["invocation_id"] = _get(actual, "invocation_id")
            values.update(
                response=content_text(_get(actual, "final_response")),
                tool_calls=tool_calls_of(_get(actual, "intermediate_data")),
                latency_ms=duration * 1000
                if isinstance(duration, int | float) and not isinstance(duration, bool)
                else None,
                output_metadata=output_metadata,
            )
            rows = _rows(values, line_of(actual, line), f"{where}.actual_invocation", default_agent_version, problems)
            if rows:
                rows[0].compare_metadata = False
                yield rows


def load_document(source: Source, problems: Problems) -> Any:
    doc = load_json_document(read_text(source, problems), problems)
    if isinstance(doc, str):
        doc = load_json_document(doc, problems)  # ADK < 1.22: the JSON text stored as a JSON string
    return doc


def iter_rows(kind: str, source: Source, problems: Problems, default_agent_version: str) -> Iterator[tuple]:
    doc = load_document(source, problems)
    if isinstance(doc, dict) and _get(doc, "eval_case_results") is not None:
        return _result_rows(doc, problems, default_agent_version)
    if isinstance(doc, dict) and _get(doc, "eval_cases") is not None:
        return _evalset_rows(doc, problems, default_agent_version)
    raise problems.fatal(line_of(doc), None, _what_else(doc))


def _what_else(doc: Any) -> str:
    if isinstance(doc, dict) and "criteria" in doc:
        return "this looks like a rubric (it has criteria); import it with import_rubric"
    if isinstance(doc, list) and doc and all(isinstance(t, dict) and "annotations" in t for t in doc[:5]):
        return "this looks like a Label Studio export (tasks with annotations); import it with import_labels"
    if isinstance(doc, list):
        return "expected an ADK eval set (eval_cases) or eval set result (eval_case_results), found a JSON list"
    return (
        "not a cases file: expected one JSON object a line (JSONL), an ADK .evalset.json (eval_cases) "
        "or an ADK .evalset_result.json (eval_case_results)"
    )


# --- export ------------------------------------------------------------------------------------------------


def _content(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"text": text}]}


def evalset_document(eval_set: EvalSet) -> dict:
    """The eval set's cases as an ADK EvalSet (snake_case, as ADK writes its own files)."""
    conversations: dict[str, list[tuple[int, Case]]] = {}
    set_ids = set()
    for case in eval_set.cases.order_by("case_id").iterator(chunk_size=2000):
        adk = case.metadata.get("adk") if isinstance(case.metadata, dict) else None
        if isinstance(adk, dict) and isinstance(adk.get("eval_id"), str) and isinstance(adk.get("turn"), int):
            conversations.setdefault(adk["eval_id"], []).append((adk["turn"], case))
            if adk.get("eval_set_id"):
                set_ids.add(adk["eval_set_id"])
        else:
            conversations.setdefault(case.case_id, []).append((1, case))
    eval_cases = []
    for eval_id, turns in conversations.items():
        conversation = []
        for _, case in sorted(turns, key=lambda t: (t[0], t[1].case_id)):
            adk = case.metadata.get("adk") if isinstance(case.metadata, dict) else None
            invocation: dict[str, Any] = {
                "invocation_id": (adk or {}).get("invocation_id", "") if isinstance(adk, dict) else "",
                "user_content": _content("user", case.input),
            }
            if case.reference:
                invocation["final_response"] = _content("model", case.reference)
            if isinstance(adk, dict) and adk.get("expected_tool_uses"):
                invocation["intermediate_data"] = {"tool_uses": adk["expected_tool_uses"]}
            invocation[ICEWATER_KEY] = {"case_id": case.case_id, "metadata": case.metadata}
            conversation.append(invocation)
        eval_cases.append({"eval_id": eval_id, "conversation": conversation})
    set_id = set_ids.pop() if len(set_ids) == 1 else "".join(c if c.isalnum() else "_" for c in eval_set.name)
    return {"eval_set_id": set_id, "name": eval_set.name, "description": eval_set.description, "eval_cases": eval_cases}


def write_evalset(eval_set: EvalSet, stream: IO[str]) -> int:
    doc = evalset_document(eval_set)
    json.dump(doc, stream, ensure_ascii=False, indent=2)
    stream.write("\n")
    return sum(len(c["conversation"]) for c in doc["eval_cases"])
