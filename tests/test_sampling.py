"""Deterministic sampling: consistent with the SDK's TraceIdRatioBased, nested rates, filters."""

from __future__ import annotations

import random

import pytest
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from tracescore.eval_config import criteria_from_config
from tracescore.exceptions import ConfigError
from tracescore.model import Invocation
from tracescore.sampling import SamplingPolicy, sample_key

CRITERIA = criteria_from_config(
    {"criteria": {"response_match_score": 0.8, "safety_v1": 0.8}}, source="test"
)


def inv(trace_id: str, **kw: object) -> Invocation:
    return Invocation(trace_id=trace_id, invocation_id="i", **kw)  # type: ignore[arg-type]


def random_ids(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(n)]


@pytest.mark.parametrize("rate", [0.0, 0.01, 0.25, 0.5, 0.999, 1.0])
def test_trace_mode_agrees_with_the_sdk_sampler(rate: float) -> None:
    sdk = TraceIdRatioBased(rate)
    policy = SamplingPolicy(rate=rate, judged_rate=1.0)
    for trace_id in random_ids(2000):
        kept = (
            sdk.should_sample(None, int(trace_id, 16), "x").decision is Decision.RECORD_AND_SAMPLE
        )
        decision = policy.decide(inv(trace_id), CRITERIA)
        assert decision.sampled_out is not kept, trace_id


def test_rates_nest_and_judged_default_is_lower() -> None:
    policy = SamplingPolicy(judged_rate=0.2, criteria={"response_match_score": 0.6})
    counts = {"response_match_score": 0, "safety_v1": 0}
    for trace_id in random_ids(5000):
        d = policy.decide(inv(trace_id), CRITERIA)
        for name in d.criteria:
            counts[name] += 1
        if "safety_v1" in d.criteria:  # the lower rate's set is inside the higher one's
            assert "response_match_score" in d.criteria
        assert set(d.skipped) | set(d.criteria) == {"response_match_score", "safety_v1"}
    assert 0.55 < counts["response_match_score"] / 5000 < 0.65
    assert 0.17 < counts["safety_v1"] / 5000 < 0.23


def test_conversation_mode_samples_whole_sessions() -> None:
    policy = SamplingPolicy(rate=0.5, by="conversation")
    kept_sessions = 0
    for n in range(200):
        decisions = {
            policy.decide(inv(t, conversation_id=f"s{n}"), CRITERIA).sampled_out
            for t in random_ids(5, seed=n)
        }
        assert len(decisions) == 1  # every turn of a session gets the same answer
        kept_sessions += not decisions.pop()
    assert 70 < kept_sessions < 130
    # without a conversation id the trace id decides, as in trace mode
    tid = random_ids(1)[0]
    assert sample_key(tid, None, by="conversation") == int(tid, 16) & (2**64 - 1)


def test_filters_and_errors() -> None:
    policy = SamplingPolicy(
        agents=["support-*"],
        exclude_agents=["support-test"],
        attributes={"deployment.environment": "prod"},
        rate=0.0,
        always_score_errors=True,
    )
    prod = {"deployment.environment": "prod"}
    assert policy.decide(inv("a" * 32, agent="sales"), CRITERIA, attributes=prod).reason == (
        "agent filter"
    )
    assert policy.decide(inv("a" * 32, agent="support-test"), CRITERIA).reason == "agent filter"
    assert (
        policy.decide(inv("a" * 32, agent="support-eu"), CRITERIA, attributes={}).reason
        == "attribute filter"
    )
    # rate 0 samples everything out, but errored runs are scored by every criterion
    assert policy.decide(inv("a" * 32, agent="support-eu"), CRITERIA, attributes=prod).reason == (
        "rate"
    )
    errored = policy.decide(
        inv("a" * 32, agent="support-eu"), CRITERIA, attributes=prod, errored=True
    )
    assert errored.criteria == {"response_match_score", "safety_v1"}
    assert (
        SamplingPolicy(attributes={"flag": "true"})
        .decide(inv("b" * 32), CRITERIA, attributes={"flag": True})
        .criteria
    )


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"sampling.rate: 1.5"):
        SamplingPolicy(rate=1.5)
    with pytest.raises(ConfigError, match=r"criteria.x: -0.1"):
        SamplingPolicy(criteria={"x": -0.1})
    with pytest.raises(ConfigError, match="nope not among the configured criteria"):
        SamplingPolicy(criteria={"nope": 0.5}).check_criteria(CRITERIA)
