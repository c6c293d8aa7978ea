"""YAML that refuses a mapping key given twice (PyYAML keeps the last one silently).

In a settings file, a second ``replay:`` section would replace the first one whole, and
every key of the first would be lost without a word. TOML refuses that already; this
loader makes YAML do the same, naming the line of the repeated key.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml import YAMLError
from yaml.nodes import MappingNode

__all__ = ["DuplicateKeyError", "YAMLError", "load_yaml"]

_MERGE = "tag:yaml.org,2002:merge"

# The C loader when PyYAML was built with libyaml (same results, faster).
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKeyError(YAMLError):
    """A mapping holds the same key twice; the message gives both lines."""


class _UniqueKeyLoader(_Base):  # type: ignore[misc]
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:  # `<<: *defaults`: explicit keys may override it
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if first is not key_node:
                at, before = key_node.start_mark, first.start_mark
                raise DuplicateKeyError(
                    f"line {at.line + 1}, column {at.column + 1}: key {key!r} given twice "
                    f"(first on line {before.line + 1}); the second would replace the first"
                )
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


def load_yaml(data: bytes | str) -> Any:
    """Parse one YAML document with safe types, refusing repeated mapping keys.

    Raises:
        YAMLError: the text is not YAML; :class:`DuplicateKeyError` when a mapping holds
            a key twice.

    """
    return yaml.load(data, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: safe types
