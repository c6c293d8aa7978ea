"""Arguments of the Python API: the forms taken, and each wrong one refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundled_examples import EXAMPLES
from tracescore.arguments import (
    criteria_argument,
    expect_type,
    goldens_argument,
    port_argument,
    with_informational,
)
from tracescore.criteria import criterion_class, informational_criteria
from tracescore.exceptions import ConfigError
from tracescore.goldens import GoldenSet, load_goldens
from tracescore.sampling import SamplingPolicy

CONFIG = EXAMPLES / "eval_config.json"
GOLDENS = EXAMPLES / "goldens"


def summary(criteria: list[object]) -> list[tuple[str, float | None]]:
    return [(c.name, c.threshold) for c in criteria]  # type: ignore[attr-defined]


def test_none_is_adks_defaults() -> None:
    assert summary(criteria_argument(None)) == [  # type: ignore[arg-type]
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
    ]


def test_a_mapping_is_an_eval_configs_criteria() -> None:
    got = criteria_argument(
        {"response_match_score": 0.5, "tool_name_match_score": {"threshold": 1}}
    )
    assert summary(got) == [("response_match_score", 0.5), ("tool_name_match_score", 1.0)]  # type: ignore[arg-type]
    whole = criteria_argument({"criteria": {"rouge_match": 0.7}})
    assert summary(whole) == [("response_match_score", 0.7)]  # type: ignore[arg-type]


def test_an_eval_config_path_as_str_or_path() -> None:
    expected = [("tool_trajectory_avg_score", 1.0), ("response_match_score", 0.5)]
    assert summary(criteria_argument(str(CONFIG))) == expected  # type: ignore[arg-type]
    assert summary(criteria_argument(CONFIG)) == expected  # type: ignore[arg-type]


def test_criterion_objects_pass_as_given() -> None:
    rouge = criterion_class("response_match_score")(threshold=0.3)
    keywords = criterion_class("contains_keywords")(threshold=1.0, keywords=("x",))  # type: ignore[call-arg]
    got = criteria_argument(c for c in (rouge, keywords))
    assert got == [rouge, keywords]
    assert got[0] is rouge


def test_a_mistake_in_a_mapping_is_the_config_error_of_a_file() -> None:
    with pytest.raises(ConfigError) as err:
        criteria_argument({"response_match_scor": 0.8})
    assert str(err.value).startswith(
        "the criteria argument: criteria.response_match_scor: unknown criterion "
        "'response_match_scor'. Did you mean 'response_match_score'?"
    )
    with pytest.raises(
        ConfigError, match=r"^the criteria argument: criteria\.response_match_score: "
    ):
        criteria_argument({"response_match_score": "high"})


def test_a_missing_eval_config_path_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.json: cannot read: No such file"):
        criteria_argument(tmp_path / "nope.json")


@pytest.mark.parametrize("name", ["response_match_score", "rouge_match"])
def test_a_criterion_name_alone_says_how_to_give_it(name: str) -> None:
    with pytest.raises(TypeError) as err:
        criteria_argument(name)
    assert str(err.value) == (
        f"criteria: {name!r} is a criterion name, not an eval config path; "
        f"pass {{{name!r}: threshold}} or criterion objects"
    )
    with pytest.raises(TypeError) as err:
        criteria_argument([name])  # type: ignore[list-item]  # on purpose
    assert str(err.value) == (
        f"criteria[0]: expected a Criterion; the name {name!r} alone has no threshold: "
        f"pass {{{name!r}: threshold}}"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0.8, r"^criteria: expected a list of Criterion objects, .* got float$"),
        (b"x", r"^criteria: expected .* got bytes$"),
        (
            [criterion_class("response_match_score")(threshold=0.5), 3],
            r"^criteria\[1\]: expected a Criterion; got int$",
        ),
    ],
)
def test_other_types_are_refused(value: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        criteria_argument(value)  # type: ignore[arg-type]  # on purpose


def test_two_criteria_of_one_name_are_refused() -> None:
    rouge = criterion_class("response_match_score")
    with pytest.raises(ValueError, match="a second") as err:
        criteria_argument([rouge(threshold=0.5), rouge(threshold=0.8)])
    assert str(err.value) == (
        "criteria[1]: a second response_match_score; results and metrics are keyed by "
        "criterion name, so give each criterion once"
    )


def test_informational_criteria_are_added_once() -> None:
    rouge = criterion_class("response_match_score")(threshold=0.5)
    names = [c.name for c in informational_criteria()]
    assert [c.name for c in with_informational([rouge])] == ["response_match_score", *names]
    count = criterion_class("tool_call_count_v1")()
    got = with_informational([count, rouge])
    assert [c.name for c in got].count("tool_call_count_v1") == 1
    assert got[0] is count


def test_goldens_as_paths_sets_or_both() -> None:
    loaded = load_goldens([GOLDENS])
    ids = [g.eval_set_id for g in loaded]
    assert [g.eval_set_id for g in goldens_argument(str(GOLDENS))] == ids
    assert [g.eval_set_id for g in goldens_argument(GOLDENS)] == ids
    assert goldens_argument(loaded[0]) == [loaded[0]]
    assert goldens_argument(loaded) == loaded
    extra = GoldenSet(path="mem", eval_set_id="mem", cases=())
    mixed = goldens_argument([GOLDENS, extra])
    assert mixed[0] is extra
    assert [g.eval_set_id for g in mixed[1:]] == ids


def test_goldens_of_another_type_are_refused() -> None:
    with pytest.raises(
        TypeError, match=r"^goldens\[1\]: expected a GoldenSet or a goldens path; got dict$"
    ):
        goldens_argument([GOLDENS, {"eval_set_id": "x"}])  # type: ignore[list-item]  # on purpose
    with pytest.raises(
        TypeError, match=r"^goldens: expected GoldenSet objects or goldens paths; got int$"
    ):
        goldens_argument(3)  # type: ignore[arg-type]  # on purpose


def test_a_duplicate_eval_id_across_given_paths_is_still_found(tmp_path: Path) -> None:
    source = next(GOLDENS.glob("*.evalset.json"))
    copy = tmp_path / "copy.evalset.json"
    copy.write_bytes(source.read_bytes())
    with pytest.raises(ConfigError, match="duplicate eval case"):
        goldens_argument([source, copy])


def test_expect_type() -> None:
    policy = SamplingPolicy()
    assert expect_type(policy, SamplingPolicy, "sampling") is policy
    with pytest.raises(TypeError) as err:
        expect_type({"judged_rate": 0.1}, SamplingPolicy, "sampling")
    assert str(err.value) == "sampling: expected SamplingPolicy, got dict"


def test_ports() -> None:
    assert port_argument(None, "metrics_port") is None
    assert port_argument(0, "metrics_port") == 0
    assert port_argument(65535, "metrics_port") == 65535
    with pytest.raises(TypeError, match=r"^metrics_port: expected an int port, got str$"):
        port_argument("9464", "metrics_port")
    with pytest.raises(TypeError, match=r"got bool$"):
        port_argument(True, "metrics_port")
    with pytest.raises(ValueError, match=r"^metrics_port: 65536 is not a port \(0-65535"):
        port_argument(65536, "metrics_port")
    with pytest.raises(ValueError, match=r"^metrics_port: -1 is not a port"):
        port_argument(-1, "metrics_port")
