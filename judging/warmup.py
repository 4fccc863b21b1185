"""Import once, before forking, what every judge lane needs: the model SDKs take seconds of CPU to import.

A Celery worker calls warm_up in its parent process (judging/tasks.py), so its pool processes
inherit the modules instead of each importing them at its first lane, all at once, on the same
cores. `run_judge --in-process` calls it too; there it only moves the import before the run.
"""

from __future__ import annotations


def warm_up() -> None:
    import anthropic  # noqa: F401 - imported for its side effect: loaded once, here
    import openai  # noqa: F401

    from . import lane  # noqa: F401 - and the lane module, with the backends it imports
