"""A judge's prompt and key go only to the base URL's host, and the SDK clients use only the allowlisted key.

Two leaks the security review found: both SDKs followed a 307 from an allowed host to one that is not and
re-sent the prompt (and the organization/project headers); and a legacy Anthropic config with an empty key
variable let the SDK read ANTHROPIC_AUTH_TOKEN, a variable no operator allowed. Redirects are not followed
(a redirect is the provider's answer: an ERROR verdict saying where it pointed), a provider that needs a key
gets one only from the variable the config names, and nothing else the SDKs would read from the environment
(organization, project, base URL, extra headers, other credentials) reaches a request.
"""

from __future__ import annotations

import http.server
import threading

import pytest

from judging import runner
from judging.backends import CallFailed, Misconfigured
from judging.backends.factory import backend_for
from judging.forms import JudgeConfigForm
from judging.models import JudgeConfig, JudgeRun, Verdict
from judging.prompt import CriterionSpec, Subject, build_request
from tests.factories import make_llm_judge, make_scope
from tests.fake_llm import FakeLLM
from tests.judging_helpers import CONFIG_FORM, KEY_ENV, KEY_VALUE

BACKENDS = ["openai", "anthropic"]
TRANSCRIPT_SECRET = "customer card ending 4242"

# Everything the two SDKs would pick up from the process environment on their own.
AMBIENT = {
    "OPENAI_API_KEY": "sk-ambient-openai-key",
    "OPENAI_ADMIN_KEY": "sk-admin-ambient",
    "OPENAI_ORG_ID": "org-ambient",
    "OPENAI_PROJECT_ID": "proj_ambient",
    "OPENAI_CUSTOM_HEADERS": "X-Ambient-Header: from-openai-env\nAuthorization: Bearer ambient-openai-custom",
    "ANTHROPIC_API_KEY": "sk-ant-ambient-key",
    "ANTHROPIC_AUTH_TOKEN": "ambient-anthropic-auth-token",
    "ANTHROPIC_CUSTOM_HEADERS": "X-Ambient-Header: from-anthropic-env\nAuthorization: Bearer ambient-ant-custom",
}


def req(response: str = "I refunded $40.00 today.") -> object:
    criteria = [CriterionSpec("correct_amount", "Right amount.")]
    return build_request(
        instruction="Grade.", criteria=criteria, subject=Subject(TRANSCRIPT_SECRET, "$40.00", [], response)
    )


def base_url(fake: FakeLLM, backend: str) -> str:
    return fake.openai_base_url if backend == "openai" else fake.anthropic_base_url


class Redirector:
    """A loopback server that answers every POST with a 307 to another server, as a hijacked or misconfigured
    provider might. 307 (unlike 302) tells a client to send the same method and body again."""

    def __init__(self, target: str):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server naming
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.hits += 1
                self.send_response(307)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.hits = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def elsewhere():
    """The server a redirect points to: on loopback, but on a port the operator did not allow."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def redirector(elsewhere, settings):
    server = Redirector(f"http://127.0.0.1:{elsewhere.port}")
    # Only the redirecting server's own host:port is allowed: the place it points to is not.
    settings.JUDGE_BASE_URL_HOSTS = [f"127.0.0.1:{server.port}"]
    yield server
    server.close()


def redirecting_config(redirector: Redirector, backend: str) -> JudgeConfig:
    url = f"http://127.0.0.1:{redirector.port}" + ("/v1" if backend == "openai" else "")
    return JudgeConfig(name="j", backend=backend, model_id="m", api_key_env=KEY_ENV, timeout_s=5, base_url=url)


# -- redirects ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_redirect_is_not_followed_and_the_other_server_receives_nothing(
    redirector, elsewhere, judge_key, monkeypatch, backend
):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-ambient")
    with pytest.raises(CallFailed) as failure:
        backend_for(redirecting_config(redirector, backend)).call(req())
    assert redirector.hits == 1
    assert elsewhere.calls == 0 and elsewhere.requests == []
    assert (failure.value.kind, failure.value.retryable) == ("rejected", False)
    reason = failure.value.reason
    assert reason.startswith(f"the judge answered HTTP 307, a redirect to 127.0.0.1:{elsewhere.port}")
    assert "redirects are not followed" in reason
    assert KEY_VALUE not in reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_the_redirect_the_same_client_answers(fake_llm, judge_key, backend):
    # The positive control: the client that refuses redirects still reaches its own server.
    config = JudgeConfig(
        name="j", backend=backend, model_id="m", api_key_env=KEY_ENV, timeout_s=5, base_url=base_url(fake_llm, backend)
    )
    assert backend_for(config).call(req()).raw.startswith("{")
    assert fake_llm.calls == 1


@pytest.mark.django_db(transaction=True)  # the lane writes from its own threads
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_against_a_redirecting_server_records_error_verdicts_that_say_so(
    redirector, elsewhere, judge_key, backend
):
    judge = make_llm_judge(None, backend=backend, base_url=redirecting_config(redirector, backend).base_url)
    run = runner.create_run(make_scope(judge, responses=["$40 back.", "Refunded $40."]), mode=JudgeRun.Mode.IN_PROCESS)
    assert runner.run_in_process(run) == JudgeRun.Status.DONE
    verdicts = list(Verdict.objects.filter(run=run))
    assert len(verdicts) == 2 * 2 and {v.outcome for v in verdicts} == {"ERROR"}
    assert {v.error_kind for v in verdicts} == {"rejected"}
    assert all("a redirect to 127.0.0.1:" in v.error_reason for v in verdicts)
    assert redirector.hits == 2  # one attempt per output: a redirect is not worth retrying
    assert elsewhere.calls == 0


# -- ambient credentials and settings ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_the_allowlisted_key_and_no_ambient_setting_reaches_the_request(fake_llm, judge_key, monkeypatch, backend):
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    config = JudgeConfig(
        name="j", backend=backend, model_id="m", api_key_env=KEY_ENV, timeout_s=5, base_url=base_url(fake_llm, backend)
    )
    backend_for(config).call(req())
    [request] = fake_llm.requests
    headers = request.headers
    assert headers["authorization"] == f"Bearer {KEY_VALUE}"
    assert "x-api-key" not in headers or headers["x-api-key"] == KEY_VALUE
    for name in ("openai-organization", "openai-project", "x-ambient-header"):
        assert name not in headers
    sent = repr(headers)
    for value in AMBIENT.values():
        for part in value.replace("\n", ":").split(":"):
            if len(part.strip()) > 8:
                assert part.strip().removeprefix("Bearer ") not in sent


@pytest.mark.parametrize(
    ("backend", "provider_url"), [("openai", "https://api.openai.com/v1"), ("anthropic", "https://api.anthropic.com")]
)
def test_an_empty_base_url_is_the_providers_own_api_whatever_the_environment_says(
    judge_key, monkeypatch, backend, provider_url
):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    config = JudgeConfig(name="j", backend=backend, model_id="m", api_key_env=KEY_ENV, base_url="")
    assert str(backend_for(config).client.base_url).rstrip("/") == provider_url


def test_a_legacy_anthropic_config_without_a_key_variable_sends_nothing(fake_llm, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", AMBIENT["ANTHROPIC_AUTH_TOKEN"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", AMBIENT["ANTHROPIC_API_KEY"])
    legacy = JudgeConfig(
        name="old", backend="anthropic", model_id="m", api_key_env="", base_url=fake_llm.anthropic_base_url
    )
    with pytest.raises(CallFailed) as failure:
        backend_for(legacy).call(req())
    assert (failure.value.kind, failure.value.retryable) == ("rejected", False)
    assert "not sent: judge old: the anthropic backend needs api_key_env" in failure.value.reason
    assert fake_llm.calls == 0


@pytest.mark.django_db
def test_a_run_cannot_start_on_a_legacy_anthropic_config_without_a_key_variable(fake_llm, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", AMBIENT["ANTHROPIC_AUTH_TOKEN"])
    judge = make_llm_judge(fake_llm, name="old", backend="anthropic", api_key_env="")
    with pytest.raises(Misconfigured, match="judge old: the anthropic backend needs api_key_env"):
        runner.create_run(make_scope(judge), mode=JudgeRun.Mode.IN_PROCESS)
    assert not JudgeRun.objects.exists() and fake_llm.calls == 0


def test_openai_without_a_key_variable_needs_a_base_url(fake_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", AMBIENT["OPENAI_API_KEY"])
    own_api = JudgeConfig(name="cloud", backend="openai", model_id="m", api_key_env="", base_url="")
    with pytest.raises(CallFailed, match="not sent: judge cloud: the provider's own API needs api_key_env"):
        backend_for(own_api).call(req())
    # A local server (Ollama, llama.cpp, vLLM) needs no key: the call goes out, with no ambient key in it.
    local = JudgeConfig(name="local", backend="openai", model_id="m", api_key_env="", base_url=fake_llm.openai_base_url)
    backend_for(local).call(req())
    [request] = fake_llm.requests
    assert AMBIENT["OPENAI_API_KEY"] not in repr(request.headers)


@pytest.mark.django_db
def test_the_form_asks_for_a_key_variable_where_the_provider_needs_one():
    form = JudgeConfigForm(data={**CONFIG_FORM, "api_key_env": "", "base_url": ""})
    assert not form.is_valid()
    assert "The provider's own API needs the name of the variable holding its key" in form.errors["api_key_env"][0]
    anthropic = JudgeConfigForm(data={**CONFIG_FORM, "backend": "anthropic", "api_key_env": ""})
    assert "The Anthropic backend needs the name of the variable" in anthropic.errors["api_key_env"][0]
    local = JudgeConfigForm(data={**CONFIG_FORM, "api_key_env": "", "base_url": "http://127.0.0.1:11434/v1"})
    assert local.is_valid(), local.errors
