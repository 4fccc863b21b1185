"""python manage.py add_judge judge.json: create a judge config from a JSON object (idempotent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Field

from evals.record_fields import ShapeError, parse_json
from evals.workspace_option import add_workspace_argument, chosen_workspace
from judging.forms import CONFIG_FIELDS, JudgeConfigForm
from judging.models import JudgeConfig


class Command(BaseCommand):
    help = (
        "Create a judge config in the workspace from a JSON file: {name, backend, model_id, base_url, api_key_env, "
        "temperature, max_output_tokens, mode, samples, max_concurrency, timeout_s, max_retries, "
        "prompt_template_version, instruments}. Only name and backend are required. Running it again with the "
        "same file changes nothing; a config already used by a run cannot change (give the new one another name). "
        "Format: docs/formats.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="a JSON file holding one judge config object")
        add_workspace_argument(parser)

    def handle(self, *args, **options):
        path = Path(options["file"])
        data = load(path)  # a broken file is said first, without asking the database
        workspace = chosen_workspace(options["workspace"])
        # The name is the workspace's: the same name in another workspace is another config.
        existing = JudgeConfig.objects.filter(workspace=workspace, name=str(data.get("name", "")).strip()).first()
        form = JudgeConfigForm(data=form_data(data), instance=existing or JudgeConfig(workspace=workspace))
        if not form.is_valid():
            raise CommandError(f"{path}: " + "; ".join(describe(form.errors)) + ". Nothing was written.")
        if existing is not None and not form.has_changed():
            self.stdout.write(
                f"judge config {existing.name} is already there, unchanged ({existing.content_hash[:12]})."
            )
            return
        if existing is not None and existing.is_in_use():
            changed = ", ".join(form.changed_data)
            raise CommandError(
                f"{path}: judge config {existing.name} is in use by runs or verdicts and cannot change ({changed}); "
                "judge configs are fixed instruments once used: give the new one another name. Nothing was written."
            )
        with transaction.atomic():
            config = form.save()
        verb = "updated" if existing is not None else "created"
        self.stdout.write(
            f"judge config {config.name} {verb} (backend {config.backend}, hash {config.content_hash[:12]})."
        )


def load(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    try:
        data = parse_json(text)  # the import readers' rules: no repeated key, no nesting beyond MAX_NESTING
    except ShapeError as exc:
        line = text.count("\n", 0, exc.offset) + 1
        raise CommandError(f'{path}, line {line}, field "{exc.path}": {exc.message}. Nothing was written.') from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:
        raise CommandError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CommandError(f'{path}: must hold one JSON object, like {{"name": ..., "backend": ...}}')
    if "api_key" in data:
        raise CommandError(
            f"{path}: has an api_key; keys are never stored. Put the key in an environment variable and give "
            'its name as api_key_env (e.g. "api_key_env": "OPENAI_API_KEY"). Nothing was written.'
        )
    unknown = sorted(set(data) - set(CONFIG_FIELDS))
    if unknown:
        raise CommandError(f"{path}: unknown field(s) {', '.join(unknown)}; known: {', '.join(CONFIG_FIELDS)}")
    return data


def form_data(data: dict) -> dict:
    """The JSON object as form data, with model defaults for what it leaves out."""
    out = {}
    for name in CONFIG_FIELDS:
        field = cast(Field, JudgeConfig._meta.get_field(name))  # a concrete field: CONFIG_FIELDS names no relation
        value = data[name] if name in data else field.get_default()
        if name == "instruments":
            value = json.dumps(value if value is not None else {})
        elif value is None:
            value = ""
        out[name] = value
    return out


def describe(errors) -> list[str]:
    return [f"{field}: {' '.join(messages)}" for field, messages in errors.items()]
