"""What each primitive takes: the parameters of a plan step, in both JSON forms.

The readable form names every parameter (`{"op": "split", "loop": "l1", "factors": [...]}`);
TVM's trace lists `inputs` (handles and values) and `attrs` (constants) by position. One
Signature per primitive describes both, so the plan reader needs no per-primitive code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Kind(enum.Enum):
    BLOCK = "block"  # a handle to a block
    LOOP = "loop"  # a handle to a loop
    BLOCK_OR_LOOP = "block_or_loop"
    BLOCKS = "blocks"  # a list of block handles
    LOOPS = "loops"
    LOCATION = "location"  # a loop, or a LocationMark (compute at the root / inline)
    INT = "int"  # an integer, or a handle to a sampled integer
    INTS = "ints"  # a list of integers or sampled-integer handles (null allowed: inferred)
    BOOL = "bool"
    STR = "str"
    VALUE = "value"  # any JSON value (annotation values, categorical candidates)
    INDEX_MAP = "index_map"  # TVMScript lambda text


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    default: Any = field(default=None)
    required: bool = True
    variadic: bool = False  # takes the rest of TVM's inputs list


@dataclass(frozen=True)
class Signature:
    op: str  # readable name, as in plans and on the command line: "split"
    tvm: str  # TVM's instruction kind: "Split"
    inputs: tuple[Param, ...] = ()
    attrs: tuple[Param, ...] = ()
    outputs: str = "none"  # "none", "one" or "many"
    doc: str = ""

    @property
    def params(self) -> tuple[Param, ...]:
        return self.inputs + self.attrs

    def param(self, name: str) -> Param | None:
        for item in self.params:
            if item.name == name:
                return item
        return None


def optional(name: str, kind: Kind, default: Any) -> Param:
    return Param(name, kind, default, required=False)
