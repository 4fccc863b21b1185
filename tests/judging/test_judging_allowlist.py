"""A judge config reads only the key variables and calls only the hosts the operator allows.

The attack: a lead writes api_key_env=DATABASE_URL (or ICEWATER_SECRET_KEY) and base_url
http://attacker.example/v1, and the worker sends the value as a bearer token. Refused in the form,
add_judge and the admin; at call time a config stored before the rule (or after the operator narrowed
a list) sends nothing and its items become ERROR, saying why.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging import allowlist, runner
from judging.backends import CallFailed, Misconfigured, api_key_for
from judging.backends.factory import backend_for
from judging.models import JudgeConfig, JudgeRun, RunItem, Verdict
from judging.prompt import CriterionSpec, Subject, build_request
from tests.config.test_settings import ROOT, load_settings
from tests.factories import default_workspace, make_llm_judge, make_scope
from tests.judging_helpers import CONFIG_FORM, KEY_ENV, KEY_VALUE

ATTACK = {"api_key_env": "DATABASE_URL", "base_url": "http://attacker.example/v1"}
DB_SECRET = "postgres://icewater:db-password-31337@db.internal/icewater"


# -- the rule (pure) -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "DATABASE_URL",
        "ICEWATER_SECRET_KEY",
        "ICEWATER_JUDGE_KEY_VARS",
        "DJANGO_SECRET_KEY",
        "CELERY_BROKER_URL",
        "REDIS_URL",
        "PGPASSWORD",
        "POSTGRES_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "SSL_CERT_FILE",
        "STRIPE_SECRET",
        "SMTP_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "database_url",
    ],
)
def test_icewater_and_infrastructure_variables_are_reserved_even_when_listed(name):
    assert allowlist.reserved(name)
    assert "is reserved" in allowlist.key_var_refusal(name, [name])


def test_only_listed_provider_variables_may_be_read():
    assert allowlist.key_var_refusal("OPENAI_API_KEY", allowlist.DEFAULT_KEY_VARS) is None
    assert allowlist.key_var_refusal("ANTHROPIC_API_KEY", allowlist.DEFAULT_KEY_VARS) is None
    refusal = allowlist.key_var_refusal("HOME", ["OPENAI_API_KEY"])
    assert refusal == "HOME is not a variable judges may read (ICEWATER_JUDGE_KEY_VARS allows: OPENAI_API_KEY)"


@pytest.mark.parametrize(
    "url",
    ["", "http://127.0.0.1:8001/v1", "http://localhost/v1", "https://LOCALHOST:9/v1", "http://[::1]:11434/v1"],
)
def test_the_default_hosts_are_loopback_and_an_empty_base_url_is_the_providers_own_api(url):
    assert allowlist.base_url_refusal(url, allowlist.DEFAULT_BASE_URL_HOSTS) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://attacker.example/v1",
        "https://api.openai.com/v1",  # a hosted endpoint must be listed
        "http://localhost.attacker.example/v1",
        "http://127.0.0.1.nip.io/v1",
        "http://2130706433/v1",  # 127.0.0.1 written as one number: not what the operator listed
        "http://127.0.0.1@attacker.example/v1",
        "http://attacker.example\\@127.0.0.1/v1",
        "http://127.0.0.1:99999/v1",
        "ftp://127.0.0.1/v1",
    ],
)
def test_any_other_host_is_refused_by_default(url):
    assert allowlist.base_url_refusal(url, allowlist.DEFAULT_BASE_URL_HOSTS) is not None


def test_listed_hosts_allow_subdomains_with_a_star_and_one_port_with_a_colon():
    hosts = ["*.openai.azure.com", "localhost:11434", "api.openai.com"]
    assert allowlist.base_url_refusal("https://team-a.openai.azure.com/openai/v1", hosts) is None
    assert allowlist.base_url_refusal("https://api.openai.com/v1", hosts) is None
    assert allowlist.base_url_refusal("http://localhost:11434/v1", hosts) is None
    assert allowlist.base_url_refusal("https://openai.azure.com/v1", hosts) is not None
    assert allowlist.base_url_refusal("https://openai.azure.com.attacker.example/v1", hosts) is not None
    assert allowlist.base_url_refusal("http://localhost:6379/v1", hosts) is not None
    assert allowlist.base_url_refusal("http://localhost/v1", hosts) is not None


# -- start-up ------------------------------------------------------------------------------------------


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "env,message",
    [
        (
            {"ICEWATER_JUDGE_KEY_VARS": "OPENAI_API_KEY,DATABASE_URL"},
            "ICEWATER_JUDGE_KEY_VARS lists DATABASE_URL, which no judge may read",
        ),
        ({"ICEWATER_JUDGE_KEY_VARS": "OPENAI-KEY"}, "'OPENAI-KEY' is not an environment variable name"),
        ({"ICEWATER_JUDGE_BASE_URL_HOSTS": "https://api.openai.com/v1"}, "is not a host name"),
    ],
)
def test_a_reserved_or_malformed_operator_list_stops_the_start(tmp_path, env, message):
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0 and message in result.stderr


@pytest.mark.subprocess
def test_the_operator_lists_are_read_from_the_environment(tmp_path):
    code = "import config.settings as s; print(s.JUDGE_KEY_VARS, s.JUDGE_BASE_URL_HOSTS)"
    env = {"ICEWATER_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    env |= {"ICEWATER_JUDGE_KEY_VARS": "MY_LLM_KEY, OPENAI_API_KEY", "ICEWATER_JUDGE_BASE_URL_HOSTS": "llm.internal"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['MY_LLM_KEY', 'OPENAI_API_KEY'] ['llm.internal']"
    default = load_settings(tmp_path)
    assert default.returncode == 0, default.stderr


# -- the form, add_judge, the admin --------------------------------------------------------------------


FORM = {**CONFIG_FORM, "name": "exfil"}


@pytest.mark.django_db
def test_the_judge_form_refuses_a_secret_variable_and_an_attacker_host(client, lead):
    client.force_login(lead)
    response = client.post(reverse("judging:config_new"), {**FORM, **ATTACK})
    page = response.content.decode()
    assert response.status_code == 400 and not JudgeConfig.objects.exists()
    assert "DATABASE_URL is reserved: a judge never reads Icewater&#x27;s own settings" in page
    assert "attacker.example is not a host judges may call" in page
    response = client.post(reverse("judging:config_new"), {**FORM, "api_key_env": "ICEWATER_SECRET_KEY"})
    assert response.status_code == 400 and "ICEWATER_SECRET_KEY is reserved" in response.content.decode()
    assert not JudgeConfig.objects.exists()
    client.post(reverse("judging:config_new"), {**FORM, "base_url": "http://127.0.0.1:8001/v1"})
    assert JudgeConfig.objects.get().base_url == "http://127.0.0.1:8001/v1"  # the positive control


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields,message",
    [
        (ATTACK, "api_key_env: DATABASE_URL is reserved"),
        (ATTACK, "base_url: attacker.example is not a host judges may call"),
        ({"api_key_env": "ICEWATER_SECRET_KEY"}, "api_key_env: ICEWATER_SECRET_KEY is reserved"),
        ({"api_key_env": "HOME"}, "api_key_env: HOME is not a variable judges may read"),
        ({"base_url": "https://api.openai.com/v1"}, "base_url: api.openai.com is not a host judges may call"),
    ],
)
def test_add_judge_refuses_them_and_writes_nothing(tmp_path, fields, message):
    default_workspace()  # the one workspace add_judge makes its config in
    path = tmp_path / "judge.json"
    config = {"name": "exfil", "backend": "openai", "model_id": "m-2026", "api_key_env": "OPENAI_API_KEY", **fields}
    path.write_text(json.dumps(config))
    with pytest.raises(CommandError, match="Nothing was written") as exc:
        call_command("add_judge", str(path), stdout=io.StringIO())
    assert message in str(exc.value)
    assert not JudgeConfig.objects.exists()


@pytest.mark.django_db
def test_an_operator_who_lists_a_host_and_a_variable_lets_a_lead_use_them(tmp_path, settings):
    default_workspace()  # the one workspace add_judge makes its config in
    settings.JUDGE_KEY_VARS = ["MY_LLM_KEY"]
    settings.JUDGE_BASE_URL_HOSTS = ["llm.internal"]
    path = tmp_path / "judge.json"
    config = {"name": "internal", "backend": "openai", "model_id": "m", "api_key_env": "MY_LLM_KEY"}
    path.write_text(json.dumps({**config, "base_url": "https://llm.internal/v1"}))
    call_command("add_judge", str(path), stdout=io.StringIO())
    assert JudgeConfig.objects.get().api_key_env == "MY_LLM_KEY"


@pytest.mark.django_db
def test_the_admin_refuses_them_too(admin_client):
    default_workspace()  # the workspace in use, where the admin adds the config
    response = admin_client.post("/admin/judging/judgeconfig/add/", {**FORM, **ATTACK})
    page = response.content.decode()
    assert response.status_code == 200 and not JudgeConfig.objects.exists()
    assert "DATABASE_URL is reserved" in page and "attacker.example is not a host judges may call" in page
    response = admin_client.post("/admin/judging/judgeconfig/add/", FORM)
    assert response.status_code == 302 and JudgeConfig.objects.get().created_by.is_superuser


# -- the shape of a base URL, wherever a config is made -----------------------------------------------

# Each is refused on every path; the loopback host is allowed, so only the URL's shape is wrong. urlsplit drops
# CR, LF and TAB without a word, so the first three looked like http://127.0.0.1:8001/v1 to the old checks.
BAD_URLS = [
    ("http://127.0.0.1:8001/v1\r\nX-Injected: 1", "must not contain whitespace or control characters (it has '\\r')"),
    ("http://127.0.0.1:8001/v1\nHost: evil", "must not contain whitespace or control characters (it has '\\n')"),
    ("http://127.0.0.1:8001/\tv1", "must not contain whitespace or control characters (it has '\\t')"),
    ("http://127.0.0.1:8001/v\u20281", "must not contain whitespace or control characters (it has '\\u2028')"),
    ("http://127.0.0.1:8001/v\x001", "must not contain whitespace or control characters (it has '\\x00')"),
    ("ftp://127.0.0.1/v1", "must be a plain http:// or https:// URL"),
    ("127.0.0.1:8001/v1", "must be a plain http:// or https:// URL"),
    ("http://:8001/v1", "must name a host"),
]


# Django's form fields refuse a NUL before any check of ours, with their own message.
BAD_URLS_IN_FORMS = [(url, message) for url, message in BAD_URLS if "\x00" not in url]


@pytest.mark.parametrize("url,message", BAD_URLS)
def test_a_base_url_is_plain_http_or_https_with_a_host_and_no_control_characters(url, message):
    assert message in allowlist.url_problem(url)
    assert message in allowlist.base_url_refusal(url, ["127.0.0.1"])


@pytest.mark.parametrize("url", ["http://127.0.0.1:8001/v1", "https://127.0.0.1/v1?x=1", "http://[::1]:11434/v1"])
def test_plain_urls_pass_the_shape_rule(url):
    assert allowlist.url_problem(url) is None


@pytest.mark.django_db
@pytest.mark.parametrize("url,message", BAD_URLS_IN_FORMS)
def test_the_judge_form_and_the_admin_refuse_a_malformed_base_url(client, lead, admin_client, url, message):
    client.force_login(lead)
    response = client.post(reverse("judging:config_new"), {**FORM, "base_url": url})
    assert response.status_code == 400 and not JudgeConfig.objects.exists()
    shown = message[0].upper() + message[1:]
    assert shown.replace("'", "&#x27;") in response.content.decode()
    response = admin_client.post("/admin/judging/judgeconfig/add/", {**FORM, "base_url": url})
    assert response.status_code == 200 and not JudgeConfig.objects.exists()
    assert shown.replace("'", "&#x27;") in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("url,message", BAD_URLS_IN_FORMS)
def test_add_judge_refuses_a_malformed_base_url_and_writes_nothing(tmp_path, url, message):
    default_workspace()  # the one workspace add_judge makes its config in
    path = tmp_path / "judge.json"
    path.write_text(json.dumps({"name": "j", "backend": "openai", "model_id": "m-2026", "base_url": url}))
    with pytest.raises(CommandError, match="Nothing was written") as exc:
        call_command("add_judge", str(path), stdout=io.StringIO())
    assert f"base_url: {message[0].upper()}{message[1:]}" in str(exc.value)
    assert not JudgeConfig.objects.exists()


@pytest.mark.django_db
def test_a_legacy_config_with_a_crlf_base_url_cannot_start_a_run(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm, name="legacy")
    scope = make_scope(judge)
    JudgeConfig.objects.filter(pk=judge.pk).update(base_url=f"{fake_llm.openai_base_url}\r\nX-Injected: 1")
    scope.judge_config.refresh_from_db()
    with pytest.raises(Misconfigured, match="judge legacy: base_url must not contain whitespace or control"):
        runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    assert not JudgeRun.objects.exists() and fake_llm.calls == 0


# -- at call time --------------------------------------------------------------------------------------


def req():
    criteria = [CriterionSpec("correct_amount", "Right amount.")]
    return build_request(instruction="Grade.", criteria=criteria, subject=Subject("Refund?", "$40", [], "$40 back."))


def test_a_stored_config_naming_a_secret_never_reads_it_nor_calls_out(fake_llm, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", DB_SECRET)
    stored = JudgeConfig(name="old", backend="openai", model_id="m", api_key_env="DATABASE_URL")
    stored.base_url = fake_llm.openai_base_url  # loopback is allowed: only the variable is wrong
    with pytest.raises(Misconfigured, match="api_key_env DATABASE_URL is reserved"):
        api_key_for(stored)
    with pytest.raises(CallFailed) as exc:
        backend_for(stored).call(req())
    assert exc.value.kind == "rejected" and not exc.value.retryable
    assert "not sent: judge old: api_key_env DATABASE_URL is reserved" in exc.value.reason
    assert DB_SECRET not in exc.value.reason
    assert fake_llm.calls == 0


def test_a_stored_config_naming_another_host_never_sends_the_key(judge_key, settings):
    stored = JudgeConfig(name="old", backend="anthropic", model_id="m", api_key_env=KEY_ENV, base_url="")
    assert backend_for(stored).model_id == "m"  # the provider's own API: allowed
    stored.base_url = "http://attacker.example/v1"
    with pytest.raises(CallFailed, match="base_url attacker.example is not a host judges may call"):
        backend_for(stored).call(req())


@pytest.mark.django_db(transaction=True)  # the lane writes from its own threads
@pytest.mark.parametrize("narrowed", ["JUDGE_KEY_VARS", "JUDGE_BASE_URL_HOSTS", "crlf"])
def test_a_queued_run_on_a_config_refused_at_call_time_fails_saying_why_and_sends_nothing(
    fake_llm, judge_key, settings, narrowed
):
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge, responses=["$40 back.", "Refunded $40."])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    if narrowed == "crlf":  # a row stored before the rule (update() skips every check), as a legacy one is
        JudgeConfig.objects.filter(pk=judge.pk).update(base_url=f"{fake_llm.openai_base_url}\r\nX-Injected: 1")
    else:
        setattr(settings, narrowed, ["OPENAI_API_KEY"] if narrowed == "JUDGE_KEY_VARS" else ["api.openai.com"])
    assert runner.run_in_process(run) == JudgeRun.Status.FAILED
    run.refresh_from_db()
    what = {
        "JUDGE_KEY_VARS": f"judge judge: api_key_env {KEY_ENV} is not a variable judges may read",
        "JUDGE_BASE_URL_HOSTS": "is not a host judges may call",
        "crlf": "judge judge: base_url must not contain whitespace or control characters (it has '\\r')",
    }[narrowed]
    assert run.status == "failed" and what in run.error
    # Our configuration is not the judge's answer: no ERROR verdicts, nothing sent, the items still to do.
    assert not Verdict.objects.filter(run=run).exists() and fake_llm.calls == 0
    assert RunItem.objects.filter(run=run, state="pending").count() == 2
    assert KEY_VALUE not in run.error


@pytest.mark.django_db
def test_a_run_cannot_start_on_a_config_the_allowlists_refuse(fake_llm, judge_key, monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", DB_SECRET)
    judge = make_llm_judge(fake_llm, name="exfil")
    scope = make_scope(judge)
    JudgeConfig.objects.filter(pk=judge.pk).update(api_key_env="DATABASE_URL")  # stored before the rule
    scope.judge_config.refresh_from_db()
    with pytest.raises(Misconfigured, match="judge exfil: api_key_env DATABASE_URL is reserved"):
        runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS, check_api_key=False)
    assert not JudgeRun.objects.exists() and fake_llm.calls == 0
