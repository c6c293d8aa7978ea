"""``quick_init``: the same records as the dataclass's own ``__init__``, built quicker."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from tracescore import model, scoring
from tracescore.criteria import base
from tracescore.goldens import cases, matching
from tracescore.records import field_setters, quick_init

# The records the pipeline builds in bulk.
QUICK: list[type[Any]] = [
    model.ToolCall,
    model.AgentText,
    model.TokenUsage,
    model.Invocation,
    cases.GoldenCase,
    matching.GoldenMatch,
    scoring.GoldenTurn,
    scoring.InvocationResult,
    scoring.CriterionSummary,
    scoring.CaseResult,
    base.EvalContext,
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Plain:
    name: str
    count: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    items: tuple[int, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Quick:
    name: str
    count: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    items: tuple[int, ...] = ()


def _values(record: object) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}  # type: ignore[arg-type]


def _reference(cls: type[Any]) -> type[Any]:
    """``cls``'s fields declared again as a plain dataclass (the generated ``__init__``)."""
    specs = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            spec = field(default=f.default)
        elif f.default_factory is not dataclasses.MISSING:
            spec = field(default_factory=f.default_factory)
        else:
            spec = field()
        specs.append((f.name, f.type, spec))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True, kw_only=True)


@pytest.mark.parametrize("cls", QUICK, ids=lambda c: c.__name__)
def test_the_pipeline_records_keep_the_dataclass_signature(cls: type[Any]) -> None:
    assert "_set0" in cls.__init__.__globals__  # built by quick_init
    reference = _reference(cls)
    assert str(inspect.signature(cls.__init__)) == str(inspect.signature(reference.__init__))
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"


def test_model_records_store_what_they_are_given_and_their_defaults() -> None:
    call = model.ToolCall(name="get", args={"a": 1}, id="c1", result=[1])
    assert _values(call) == _values(
        _reference(model.ToolCall)(name="get", args={"a": 1}, id="c1", result=[1])
    )
    inv = model.Invocation(trace_id="t", invocation_id="i", tool_calls=(call,), end_ns=5)
    ref = _reference(model.Invocation)(
        trace_id="t", invocation_id="i", tool_calls=(call,), end_ns=5
    )
    assert _values(inv) == _values(ref)
    assert inv.usage == model.TokenUsage() and inv.provenance == {} and inv.tags == {}


def test_same_values_as_the_generated_init() -> None:
    for kwargs in ({"name": "a"}, {"name": "b", "count": 3, "tags": {"k": "v"}, "items": (1, 2)}):
        assert _values(Quick(**kwargs)) == _values(Plain(**kwargs))
    assert str(inspect.signature(Quick.__init__)) == str(inspect.signature(Plain.__init__))


def test_default_factories_give_a_fresh_value_each_time() -> None:
    first, second = Quick(name="a"), Quick(name="b")
    assert first.tags == {} and first.tags is not second.tags


def test_argument_errors_are_the_usual_ones() -> None:
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'name'"):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Quick(name="a", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional argument"):
        Quick("a")  # type: ignore[call-arg]


def test_everything_else_the_dataclass_gave_stays() -> None:
    record = Quick(name="a", count=2, tags={"k": "v"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.count = 3  # type: ignore[misc]
    assert record == Quick(name="a", count=2, tags={"k": "v"})
    assert record != Quick(name="a", count=3)
    assert repr(record) == "Quick(name='a', count=2, tags={'k': 'v'}, items=())"
    assert pickle.loads(pickle.dumps(record)) == record
    assert copy.deepcopy(record) == record
    assert dataclasses.replace(record, count=5).count == 5
    assert hash(Quick(name="a", tags=None)) == hash(Quick(name="a", tags=None))  # type: ignore[arg-type]
    assert not hasattr(record, "__dict__")


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class One:
    name: str


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Empty:
    pass


def test_the_state_is_the_field_values_in_order_read_through_the_slots() -> None:
    record = Quick(name="a", count=2, tags={"k": "v"}, items=(1,))
    plain = Plain(name="a", count=2, tags={"k": "v"}, items=(1,))
    assert record.__getstate__() == tuple(plain.__getstate__())  # type: ignore[attr-defined]
    assert One(name="x").__getstate__() == ("x",)  # type: ignore[attr-defined]
    assert Empty().__getstate__() == ()  # type: ignore[attr-defined]
    assert Quick.__setstate__.__qualname__ == "Quick.__setstate__"  # type: ignore[attr-defined]


@pytest.mark.parametrize("record", [One(name="x"), Empty(), Quick(name="a", items=(1, 2))])
def test_every_shape_pickles_and_copies_to_an_equal_record(record: object) -> None:
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(record, protocol=protocol))
        assert again == record and again is not record
    assert copy.copy(record) == record and copy.deepcopy(record) == record


def test_a_state_of_another_length_is_refused_not_half_stored() -> None:
    record = object.__new__(Quick)
    with pytest.raises(ValueError, match="unpack"):
        record.__setstate__(("a", 1))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="unpack"):
        record.__setstate__(("a", 1, {}, (), "extra"))  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = record.name


def test_a_nested_invocation_pickles_whole() -> None:
    call = model.ToolCall(name="get", args={"a": [1, 2.5, None]}, id="c1", result="ok")
    inv = model.Invocation(
        trace_id="t",
        invocation_id="i",
        agents=("a", "b"),
        tool_calls=(call,),
        intermediate_responses=(model.AgentText(author="a", text="hé"),),
        usage=model.TokenUsage(input_tokens=3, output_tokens=4),
        provenance={"user_content": "genai"},
    )
    again = pickle.loads(pickle.dumps([inv, inv], protocol=pickle.HIGHEST_PROTOCOL))
    assert again == [inv, inv] and again[0] is again[1]  # shared objects stay shared
    assert again[0].tool_calls[0].args == {"a": [1, 2.5, None]}


def test_other_shapes_are_refused_when_the_class_is_defined() -> None:
    with pytest.raises(TypeError, match="frozen dataclass with slots"):
        quick_init(dataclass(slots=True, kw_only=True)(type("Mutable", (), {})))
    with pytest.raises(TypeError, match="frozen dataclass with slots"):
        quick_init(dataclass(frozen=True, kw_only=True)(type("NoSlots", (), {})))

    with pytest.raises(TypeError, match="__post_init__"):

        @quick_init
        @dataclass(frozen=True, slots=True, kw_only=True)
        class Checked:
            name: str

            def __post_init__(self) -> None:
                pass

    with pytest.raises(TypeError, match="fields only"):

        @quick_init
        @dataclass(frozen=True, slots=True, kw_only=True)
        class WithInitVar:
            name: str
            scale: dataclasses.InitVar[int] = 1

    with pytest.raises(TypeError, match="keyword-only"):

        @quick_init
        @dataclass(frozen=True, slots=True)
        class Positional:
            name: str


def test_field_setters_store_each_named_field_in_the_order_named() -> None:
    set_items, set_name, set_count, set_tags = field_setters(
        Quick, "items", "name", "count", "tags"
    )
    record = object.__new__(Quick)
    set_items(record, (1,))
    set_name(record, "n")
    set_count(record, 2)
    set_tags(record, {"a": "b"})
    assert record == Quick(name="n", count=2, tags={"a": "b"}, items=(1,))


@pytest.mark.parametrize(
    "names",
    [("name", "count", "tags"), ("name", "count", "tags", "items", "name"), ("nam", "count")],
    ids=["a-field-missing", "a-field-twice", "no-such-field"],
)
def test_field_setters_need_every_field_once(names: tuple[str, ...]) -> None:
    with pytest.raises(TypeError, match="each field once"):
        field_setters(Quick, *names)


def test_field_setters_need_a_quick_init_class() -> None:
    with pytest.raises(TypeError, match="needs a quick_init class"):
        field_setters(Plain, "name", "count", "tags", "items")
