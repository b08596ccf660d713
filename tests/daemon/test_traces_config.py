"""config.json's ``traces`` section and the OTEL_* variables: when traces
are on, where they go, and bad values refused naming the field."""

from __future__ import annotations

import pytest

from daemon.config import ConfigError, parse_config
from daemon.config.traces import TracesConfig, traces_plan
from daemon.process.traces import _shown, start_traces

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}


def test_off_unless_an_endpoint_is_set() -> None:
    plan = traces_plan(TracesConfig(), {})
    assert not plan.enabled and plan.why == "no OTLP endpoint configured"
    assert start_traces(TracesConfig(), {}) == (
        None,
        {"enabled": False, "endpoint": None, "content": False, "why": "no OTLP endpoint configured"},
    )


@pytest.mark.parametrize(
    ("config", "env", "enabled", "url"),
    [
        (TracesConfig(), ENDPOINT, True, None),  # the exporter reads the variables itself
        (TracesConfig(), {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True, None),
        (TracesConfig(), {**ENDPOINT, "OTEL_SDK_DISABLED": "true"}, False, None),
        (TracesConfig(enabled=False), ENDPOINT, False, None),
        (TracesConfig(enabled=True), {}, True, None),
        (TracesConfig(endpoint="http://mine:4318/"), ENDPOINT, True, "http://mine:4318/v1/traces"),
        (TracesConfig(endpoint="https://mine"), {}, True, "https://mine/v1/traces"),
    ],
)
def test_when_traces_are_on_and_where_they_go(
    config: TracesConfig, env: dict[str, str], enabled: bool, url: str | None
) -> None:
    plan = traces_plan(config, env)
    assert plan.enabled is enabled
    assert plan.traces_url == url
    if url:
        assert plan.metrics_url == url.replace("/v1/traces", "/v1/metrics")


def test_content_and_service_name_from_config_or_the_standard_variables() -> None:
    assert not traces_plan(TracesConfig(), ENDPOINT).content
    assert traces_plan(TracesConfig(content=True), ENDPOINT).content
    on = {**ENDPOINT, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "TRUE"}
    assert traces_plan(TracesConfig(), on).content
    assert traces_plan(TracesConfig(), ENDPOINT).service_name == "ikigaid"
    named = {**ENDPOINT, "OTEL_SERVICE_NAME": "mine"}
    assert traces_plan(TracesConfig(service_name="cfg"), named).service_name == "mine"


def test_a_url_is_shown_without_its_user_and_password() -> None:
    assert _shown("http://me:s3cret@collector:4318/x") == "http://collector:4318/x"
    assert _shown("http://collector:4318") == "http://collector:4318"


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ({"endpoint": "ftp://x"}, "traces.endpoint: expected an http:// or https:// URL"),
        ({"endpoint": "localhost:4318"}, "traces.endpoint: expected an http:// or https:// URL"),
        ({"endpoint": ""}, "traces.endpoint"),
        ({"enabled": "yes"}, "traces.enabled"),
        ({"content": 1}, "traces.content"),
        ({"sample": 0.5}, "sample"),
    ],
)
def test_a_bad_section_is_refused_naming_the_field(section: dict[str, object], said: str) -> None:
    import json

    with pytest.raises(ConfigError) as e:
        parse_config(json.dumps({"traces": section}), "/etc/c.json")
    assert said in str(e.value) and str(e.value).startswith("/etc/c.json")
