"""The typed requests make mypy catch a view that hands `request.user` on unguarded (evals/access.py).

Django types `request.user` as `User | AnonymousUser`; a view behind `role_required` declares
`AuthenticatedHttpRequest`, whose user is a `User`. The test command runs mypy over the apps; here the
same checker (the project's settings, the django plugin) reads two small views: the typed one passes,
the same view taking a plain HttpRequest is refused, and so is one that reads `request.htmx` untyped.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

VIEW = """
from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from evals.access import AuthenticatedHttpRequest, HtmxHttpRequest, role_required
from evals.models import Role, User


def greet(user: User) -> str:
    return user.get_username()


@role_required(Role.LEAD)
def view(request: {request_type}) -> HttpResponse:
    return HttpResponse(greet(request.user))


def partial(request: {htmx_type}) -> HttpResponse:
    return HttpResponse("swap" if request.htmx else "page")
"""


def mypy(tmp_path: Path, *, request_type: str, htmx_type: str) -> subprocess.CompletedProcess:
    source = tmp_path / "typed_view.py"
    source.write_text(textwrap.dedent(VIEW.format(request_type=request_type, htmx_type=htmx_type)))
    # The project's [tool.mypy] (its plugin and settings), on this file only; the cache the lint step warmed.
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(source)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_view_typed_as_authenticated_passes_its_user_on(tmp_path):
    result = mypy(tmp_path, request_type="AuthenticatedHttpRequest", htmx_type="HtmxHttpRequest")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_a_plain_request_is_refused_where_a_user_is_needed_and_htmx_is_read(tmp_path):
    result = mypy(tmp_path, request_type="HttpRequest", htmx_type="HttpRequest")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Argument 1 to "greet" has incompatible type "User | AnonymousUser"; expected "User"' in result.stdout
    assert '"HttpRequest" has no attribute "htmx"' in result.stdout
