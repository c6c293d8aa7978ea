"""Quicker construction of the frozen, slotted dataclasses that carry the pipeline's data.

Why: a frozen dataclass's generated ``__init__`` stores each field with
``object.__setattr__(self, "name", value)``, which looks the field up by name on every
call. A replay builds millions of these records (a ``ToolCall`` per call, an
``Invocation`` per turn, a summary per case and criterion, for the runs and again for
the goldens), and that store is most of their cost: ~1.0 µs for eight fields against
~0.4 µs through the fields' slot descriptors, which is what :func:`quick_init` uses.

Pickling has the same cost twice over: the ``__getstate__`` and ``__setstate__`` that
dataclass gives a frozen, slotted class call :func:`dataclasses.fields` and go field by
field by name, for every record. ``replay --jobs`` sends each worker's invocations to the
parent pickled, and the parent unpickles them one part after another: for the 13k
invocations of the replay benchmark, 0.42 s that way against 0.16 s through the slot
descriptors (and 0.58 s against 0.42 s to pickle them, in the workers). So those two are
replaced as well.

Contract: the class keeps everything :func:`dataclasses.dataclass` gave it (frozen
assignment errors, ``__eq__``, ``__hash__``, ``__repr__``, pickling, copying,
``replace``); only ``__init__``, ``__getstate__`` and ``__setstate__`` are replaced:
``__init__`` by one with the same keyword-only signature, defaults and default
factories, storing the same values; the state is the tuple of the field values in field
order (dataclass's is the same values in a list), read and stored through the slots.
Only the shape these records use is supported (``frozen=True, slots=True,
kw_only=True``; no ``__post_init__``, ``InitVar`` or ``init=False`` field): anything
else is refused when the class is defined.
"""

from __future__ import annotations

import dataclasses
import inspect
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["field_setters", "quick_init"]

_T = TypeVar("_T", bound="DataclassInstance")


class _Factory:
    """The default of a field with a ``default_factory`` (shown as ``<factory>``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: Final = _Factory()


def quick_init(cls: type[_T]) -> type[_T]:
    """Give the frozen, slotted, keyword-only dataclass ``cls`` a quicker ``__init__``.

    Apply it above ``@dataclass(frozen=True, slots=True, kw_only=True)``.

    Raises:
        TypeError: ``cls`` is not a dataclass of that shape.

    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: quick_init needs a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: quick_init does not run __post_init__")
    fields = dataclasses.fields(cls)
    # The generated __init__ must take exactly the parameters dataclass's own takes (an
    # InitVar, say, is a parameter but not a field): else refuse rather than differ.
    expected = list(inspect.signature(cls.__init__).parameters)[1:]
    if expected != [f.name for f in fields]:
        raise TypeError(f"{cls.__name__}: quick_init supports fields only, not {expected}")
    names: dict[str, Any] = {"_FACTORY": _FACTORY}
    signature: list[str] = []
    body: list[str] = []
    for index, f in enumerate(fields):
        if not f.init or not f.kw_only:
            raise TypeError(f"{cls.__name__}.{f.name}: quick_init needs keyword-only fields")
        # The slot's member descriptor stores without a lookup by name.
        names[f"_set{index}"] = cls.__dict__[f.name].__set__
        if f.default is not dataclasses.MISSING:
            names[f"_default{index}"] = f.default
            signature.append(f"{f.name}=_default{index}")
            body.append(f"    _set{index}(self, {f.name})")
        elif f.default_factory is not dataclasses.MISSING:
            names[f"_factory{index}"] = f.default_factory
            signature.append(f"{f.name}=_FACTORY")
            value = f"_factory{index}() if {f.name} is _FACTORY else {f.name}"
            body.append(f"    _set{index}(self, {value})")
        else:
            signature.append(f.name)
            body.append(f"    _set{index}(self, {f.name})")
    parameters = ", *, " + ", ".join(signature) if signature else ""
    source = "def __init__(self{}):\n{}\n".format(parameters, "\n".join(body) or "    pass")
    exec(source, names)
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    _quick_state(cls, [f.name for f in fields])
    _QUICK.add(cls)
    return cls


#: The classes :func:`quick_init` gave their methods (the only ones whose every field
#: is a slot the setters may store into).
_QUICK: set[type[Any]] = set()


#: A slot's setter: ``setter(record, value)`` stores the field's value.
Setter = Callable[[Any, Any], None]


def field_setters(cls: type[Any], *names: str) -> tuple[Setter, ...]:
    """The slot setters of a :func:`quick_init` class's fields ``names``, in that order.

    For compiled code that builds many records: ``record = object.__new__(cls)``, then
    each setter with its field's value. From C, a keyword call of the class builds a
    kwargs dict for the Python ``__init__`` (~0.9 µs for four fields); the setters take
    ~50 ns each. Naming the fields at the call site keeps it right when they are
    reordered.

    Raises:
        TypeError: ``cls`` is no :func:`quick_init` class, or ``names`` are not each of its
            fields once: every field is stored, no default is applied.

    """
    if cls not in _QUICK:
        raise TypeError(f"{cls.__name__}: field_setters needs a quick_init class")
    fields = [f.name for f in dataclasses.fields(cls)]
    if sorted(names) != sorted(fields):  # the fields are distinct: so must the names be
        raise TypeError(f"{cls.__name__}: field_setters needs each field once: {fields}")
    return tuple(cls.__dict__[name].__set__ for name in names)


def _quick_state(cls: type[Any], names: list[str]) -> None:
    """Give ``cls`` a ``__getstate__`` and ``__setstate__`` through the slot descriptors."""
    namespace: dict[str, Any] = {
        f"_set{index}": cls.__dict__[name].__set__ for index, name in enumerate(names)
    }
    if len(names) > 1:
        # attrgetter with several names returns their values as a tuple, in C.
        namespace["_get"] = operator.attrgetter(*names)
        getter = "def __getstate__(self):\n    return _get(self)\n"
    else:
        getter = "def __getstate__(self):\n    return ({})\n".format(
            "".join(f"self.{name}," for name in names)
        )
    # Unpacking refuses a state of another length (a record pickled by another version).
    values = "".join(f"_v{index}, " for index in range(len(names)))
    stores = "".join(f"    _set{index}(self, _v{index})\n" for index in range(len(names)))
    setter = f"def __setstate__(self, state):\n    ({values}) = state\n{stores}"
    exec(getter + setter, namespace)
    for method in ("__getstate__", "__setstate__"):
        function = namespace[method]
        function.__qualname__ = f"{cls.__qualname__}.{method}"
        function.__module__ = cls.__module__
        setattr(cls, method, function)
