"""Memory: storages (flat byte arrays in a scope) and typed views of them.

A Storage is what a buffer's `data` handle points at. Generated code reads and writes it
through memoryviews, one per element type, indexed in elements; narrow floats are stored as
their bit patterns (see semantics.values). A Pointer is a handle into the middle of a storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tirc.ir.dtype import DataType

# memory a block's threads share: the thread model race-checks it, lockstep keeps it per block
SHARED_SCOPES = ("shared", "shared.dyn", "warp")

# element kind -> the numpy type a memoryview indexes it as
_ACCESS_TYPES: dict[str, type] = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.uint16,
    "bfloat16": np.uint16,
    "float8_e4m3fn": np.uint8,
    "float8_e5m2": np.uint8,
    "handle": np.uint64,
}

# element kind -> the numpy type of a user's array holding it
_ARRAY_TYPES: dict[str, type] = {
    **_ACCESS_TYPES,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}


def element_name(dtype: DataType) -> str:
    return str(dtype.element)


def array_type(dtype: DataType) -> np.dtype:
    """The numpy dtype of an array holding elements of dtype (lanes count as elements)."""
    name = element_name(dtype)
    if name not in _ARRAY_TYPES:
        raise ValueError(f"no array type for {dtype}")
    return np.dtype(_ARRAY_TYPES[name])


def access_type(dtype: DataType) -> np.dtype:
    return np.dtype(_ACCESS_TYPES[element_name(dtype)])


class Storage:
    """A flat block of memory in a scope; views of it are cached per element type."""

    __slots__ = ("name", "array", "scope", "dtype", "_views", "race")

    def __init__(self, name: str, array: np.ndarray, scope: str, dtype: DataType):
        self.name = name
        self.array = array  # one-dimensional and contiguous
        self.scope = scope
        self.dtype = dtype  # the element type it was allocated for
        self._views: dict[str, memoryview] = {}
        self.race: object = None  # a threads.RaceTracker while shared memory is watched

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)

    def view(self, dtype: DataType) -> memoryview:
        """The storage as elements of dtype's scalar type."""
        name = element_name(dtype)
        found = self._views.get(name)
        if found is None:
            kind = access_type(dtype)
            raw = self.array.view(np.uint8)
            usable = raw[: raw.size - raw.size % kind.itemsize]
            found = usable.view(kind).data
            self._views[name] = found
        return found

    def __repr__(self) -> str:
        return f"<{self.scope} storage {self.name}: {self.nbytes} bytes>"


@dataclass(frozen=True, slots=True)
class Pointer:
    """A handle `byte_offset` bytes into `storage` (tvm_access_ptr, address_of)."""

    storage: Storage
    byte_offset: int
    dtype: DataType | None = None  # the element type it was made for, where known


# Which fresh storages hold garbage instead of zeros: none (the default), those named, or all
# (None). See `garbage_in_fresh_memory`.
_GARBAGE: ContextVar[frozenset[str] | None] = ContextVar("fresh_garbage", default=frozenset())
GARBAGE_BYTE = 0xFF  # every float type's NaN, -1 for signed integers, the maximum for unsigned


@contextmanager
def garbage_in_fresh_memory(names: Iterable[str] | None = None) -> Iterator[None]:
    """Within: fresh memory of the storages called `names` (all, where None) has every byte
    GARBAGE_BYTE instead of 0. A program whose results change with it reads memory it never
    wrote (the language leaves fresh memory's contents unspecified)."""
    token = _GARBAGE.set(None if names is None else frozenset(names))
    try:
        yield
    finally:
        _GARBAGE.reset(token)


def fresh_bytes(array: np.ndarray, name: str | None) -> np.ndarray:
    """`array` (zeros), filled with garbage where `garbage_in_fresh_memory` asks for it
    (storages without a name only when it asks for all)."""
    wanted = _GARBAGE.get()
    if wanted is None or (name is not None and name in wanted):
        array.view(np.uint8).fill(GARBAGE_BYTE)
    return array


def allocate(name: str, count: int, dtype: DataType, scope: str = "global") -> Storage:
    """Fresh storage for `count` elements of dtype, zero-filled (the language leaves the
    contents unspecified; zeros make runs reproducible; see garbage_in_fresh_memory)."""
    lanes = dtype.lanes
    array = fresh_bytes(np.zeros(max(count, 0) * lanes, dtype=access_type(dtype)), name)
    return Storage(name, array, scope, dtype.element)


def view_of(handle: object, dtype: DataType) -> tuple[memoryview, int]:
    """(memoryview, base element index) of a handle value for elements of dtype."""
    if isinstance(handle, Storage):
        return handle.view(dtype), 0
    if isinstance(handle, Pointer):
        size = access_type(dtype).itemsize
        if handle.byte_offset % size:
            raise ValueError(f"pointer at byte {handle.byte_offset} is not aligned for {dtype}")
        return handle.storage.view(dtype), handle.byte_offset // size
    raise TypeError(f"not a memory handle: {handle!r}")


def storage_of(handle: object) -> Storage:
    if isinstance(handle, Pointer):
        return handle.storage
    if isinstance(handle, Storage):
        return handle
    raise TypeError(f"not a memory handle: {handle!r}")


def fresh_copy(handle: object) -> object:
    """A private copy of handle's storage (each GPU thread's own local memory)."""
    storage = storage_of(handle)
    copy = Storage(storage.name, storage.array.copy(), storage.scope, storage.dtype)
    if isinstance(handle, Pointer):
        return Pointer(copy, handle.byte_offset, handle.dtype)
    return copy


def storage_from_array(name: str, array: np.ndarray, dtype: DataType) -> Storage:
    """A storage that shares memory with a user's C-contiguous array of dtype."""
    flat = array.reshape(-1)
    return Storage(name, flat.view(access_type(dtype)), "global", dtype.element)
