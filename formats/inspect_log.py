"""Inspect AI eval logs (`.eval`, and `.json` logs), read with inspect_ai's own reader.

inspect_ai.log.read_eval_log reads both formats (a `.eval` file is a zip archive of JSON
documents; a `.json` log is one document), resolves the attachments it stores long
texts in, and validates them against its own models, so nothing here parses a log by
hand. Reading a log never counts tokens: tiktoken (which downloads its encodings on
first use) is only needed to run an eval, not to read one.

Mapping (docs/formats.md): each sample is one case (its `id`, its input as text, its
target as the reference) and one output (the final assistant message, the tool calls
of the message history paired with their results, `total_time` as the latency), under
the model's name as agent version unless one is given. Scores are not read here:
verdicts belong to judging (formats/inspect_scores.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from evals.problems import Problems, RecordError

from .archives import ArchiveLimits, check_archive
from .readers import Source

# How inspect_ai writes a .json log: `{"version": 2, "status": ...` first (pretty-printed or not).
_JSON_LOG_HEAD = re.compile(rb'^(\xef\xbb\xbf)?\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
# Where a value of ours came from in an Inspect sample, for messages.
_SAMPLE_FIELD = {
    "case_id": "id",
    "input": "input",
    "reference": "target",
    "metadata": "metadata",
    "response": "messages",
    "tool_calls": "messages",
    "latency_ms": "total_time",
}


def is_inspect_log(source: Source) -> bool:
    """A `.eval` file, or a `.json` file that starts the way inspect_ai writes its logs."""
    if source.suffix == ".eval":
        return True
    if source.suffix != ".json":
        return False
    position = source.stream.tell()
    head = source.stream.read(512)
    source.stream.seek(position)
    return bool(_JSON_LOG_HEAD.match(head))


def _path_of(source: Source) -> str | None:
    """The file behind the stream when there is one (the command line), so the reader can skip events."""
    name = getattr(source.stream, "name", None)
    if isinstance(name, str) and Path(name).is_file() and name.lower().endswith((".eval", ".json")):
        return name
    return None


def read_log(source: Source, problems: Problems):
    """The whole log as inspect_ai's EvalLog; a file it cannot read is one problem naming why."""
    from inspect_ai.log import read_eval_log  # imported on use: importing inspect_ai takes about a second

    fmt: Literal["eval", "json"] = "eval" if source.suffix == ".eval" else "json"
    if fmt == "eval":  # a zip: how far it expands is checked before inspect_ai decompresses any of it
        check_archive(source.stream, source.archive_limits or ArchiveLimits.upload(), problems)
    path = _path_of(source)
    try:
        if path:
            # Events (every model call and tool call again, with timings) are not needed here and are the bulk.
            log = read_eval_log(path, resolve_attachments=True, format=fmt, exclude_fields={"events"})
        else:
            log = read_eval_log(source.stream, resolve_attachments=True, format=fmt)
    except Exception as exc:  # a zip, JSON or validation error, whatever inspect_ai raises for a bad file
        detail = " ".join(str(exc).split())[:300]
        raise problems.fatal(
            None,
            None,
            f"inspect_ai cannot read this as an Inspect AI eval log ({type(exc).__name__}: {detail}); "
            "give a .eval or .json log as `inspect eval` writes it",
        ) from None
    if log.status == "started":
        raise problems.fatal(None, "status", "the eval is still running; import its log once it has finished")
    if not log.samples:
        raise problems.fatal(
            None, "samples", "the log has no samples (was the eval run with --no-log-samples?); nothing to import"
        )
    epochs = sorted({s.epoch for s in log.samples})
    if epochs != [1]:
        raise problems.fatal(
            None,
            "samples",
            f"the log has {len(epochs)} epochs; Icewater keeps one output per case and agent version: "
            "import a log run with --epochs 1",
        )
    return log


def text_of(message: Any) -> str:
    return message.text if message is not None else ""


def input_text(value: str | list) -> str:
    """A sample's input as text: a string as it is, a message list as its user messages' text."""
    if isinstance(value, str):
        return value
    users = [m.text for m in value if m.role == "user"]
    return "\n\n".join(users if users else [m.text for m in value])


def target_text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "\n".join(value)


def tool_calls_of(messages: list) -> list[dict]:
    """Every tool call of the assistant messages, in order, with the result of the tool message answering it."""
    calls: list[dict] = []
    by_id: dict[str, dict] = {}
    for message in messages:
        if message.role == "assistant":
            for call in message.tool_calls or []:
                entry = {"name": call.function, "args": call.arguments or {}, "response": None}
                calls.append(entry)
                if call.id:
                    by_id[call.id] = entry
        elif message.role == "tool" and message.tool_call_id in by_id:
            entry = by_id[message.tool_call_id]
            if message.error is not None:
                entry["response"] = {"error": {"type": message.error.type, "message": message.error.message}}
            else:
                entry["response"] = message.text
    return calls


def final_response(sample: Any) -> str:
    for message in reversed(sample.messages):
        if message.role == "assistant":
            return message.text
    return sample.output.completion if sample.output else ""


def sample_values(log: Any, sample: Any, agent_version: str | None) -> dict:
    """The record of one sample, in the fields of the cases format."""
    inspect_case: dict[str, Any] = {"task": log.eval.task, "sample_id": sample.id}
    if sample.metadata:
        inspect_case["metadata"] = sample.metadata
    inspect_output = {"eval_id": log.eval.eval_id, "run_id": log.eval.run_id, "model": log.eval.model}
    if sample.uuid:
        inspect_output["sample_uuid"] = sample.uuid
    return {
        "case_id": sample.id,
        "input": input_text(sample.input),
        "reference": target_text(sample.target),
        "metadata": {"inspect": inspect_case},
        "agent_version": agent_version or log.eval.model,
        "response": final_response(sample),
        "tool_calls": tool_calls_of(sample.messages),
        "latency_ms": sample.total_time * 1000 if sample.total_time is not None else None,
        "output_metadata": {"inspect": inspect_output},
    }


def iter_rows(source: Source, problems: Problems, agent_version: str | None) -> Iterator[tuple]:
    """(case, output) per sample. `agent_version` None: the model's name (e.g. openai/gpt-4o)."""
    from .case_records import build_rows

    log = read_log(source, problems)
    for i, sample in enumerate(log.samples):
        where = f"samples[{i}]"
        if sample.error is not None:
            problems.add(
                None,
                f"{where}.error",
                f"sample {sample.id!r} failed in Inspect ({' '.join(sample.error.message.split())[:200]}), so there "
                "is no output to import: complete the log with `inspect eval-retry` first",
            )
            continue
        values = sample_values(log, sample, agent_version)
        if not values["input"].strip():
            problems.add(None, f"{where}.input", f"sample {sample.id!r} has no input text")
            continue
        try:
            # No lines in a log: a conflict with what is already imported names the sample's position (1, 2, ...).
            case, output = build_rows(values, i + 1, values["agent_version"])
        except RecordError as exc:
            field = _SAMPLE_FIELD.get((exc.field or "").split("[")[0].split(".")[0], exc.field)
            problems.add(None, f"{where}.{field}", f"sample {sample.id!r}: {exc.message}")
            continue
        # A log carries the dataset's metadata, not what another file gave the case: an existing case is
        # matched on case_id, input and reference, as for ADK result files.
        case.compare_metadata = False
        yield case, output
