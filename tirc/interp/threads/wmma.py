"""The wmma intrinsics (tensor-core fragments, semantics.wmma) for one thread, registered as
Python implementations. Inside a kernel, loads from and stores to shared memory go through
its race tracker: each thread of the warp reads (or writes) the whole tile, so a tile other
threads wrote with no barrier in between is a data race, as on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tirc.analysis.wmma_fragments import PLAIN_MMA_SHAPE, operand_shape
from tirc.interp.fault import Fault
from tirc.interp.memory.storage import Pointer, Storage, access_type, storage_of
from tirc.interp.semantics import wmma as fragments
from tirc.interp.semantics.extensions import INTRINSICS
from tirc.interp.semantics.values import decode
from tirc.interp.threads.scheduler import RaceTracker
from tirc.ir.dtype import DataType


def _element(handle: object) -> DataType:
    """The element type a storage or pointer is seen as: the pointer's, else the storage's."""
    if isinstance(handle, Pointer) and handle.dtype:
        return handle.dtype
    return storage_of(handle).dtype


def _elements(handle: object) -> tuple[np.ndarray, int]:
    """(float64 copy of all elements, start element) of a storage or pointer."""
    element = _element(handle)
    raw = np.asarray(storage_of(handle).view(element))
    start = 0
    if isinstance(handle, Pointer):
        start = handle.byte_offset // access_type(element).itemsize
    return decode(raw, element).astype(np.float64), start


def _fault(message: str, site: int) -> Exception:
    return Fault(site, message) if site >= 0 else IndexError(message)


def _check(handle: object, elements: np.ndarray, limit: int, verb: str, site: int) -> None:
    """A tile's elements of a storage, within it."""
    bad = (elements < 0) | (elements >= limit)
    if bad.any():
        element = int(elements.ravel()[int(np.argmax(bad.ravel()))])
        raise _fault(fragments.outside_tile(verb, storage_of(handle).name, element, limit), site)


def _write(
    handle: object,
    start: int,
    values: np.ndarray,
    positions: np.ndarray,
    verb: str,
    thread: int = -1,
    site: int = -1,
) -> None:
    """Stores float64 values as the handle's elements, as lockstep's tiles do (to_memory)."""
    storage, element = storage_of(handle), _element(handle)
    memory: Any = storage.view(element)  # typeshed's memoryview takes only ints
    _check(handle, start + positions, len(memory), verb, site)
    raw, bad = fragments.to_memory(values.ravel(), element)
    if bad is not None and bad.any():
        number = values.ravel()[int(np.argmax(bad))].item()
        raise _fault(fragments.does_not_fit(verb, storage.name, number, element), site)
    tracker = _watched(storage, thread)
    size = access_type(element).itemsize
    for position, stored in zip(positions.ravel().tolist(), raw.tolist(), strict=True):
        where = start + position
        if tracker is not None:
            tracker.write(where * size, thread, site, storage.name, stored, memory[where])
        memory[where] = stored


def _watched(storage: Storage, thread: int) -> RaceTracker | None:
    """The storage's race tracker when a kernel thread accesses watched (shared) memory."""
    tracker = storage.race
    return tracker if thread >= 0 and isinstance(tracker, RaceTracker) else None


def _track_reads(handle: object, elements: np.ndarray, thread: int, site: int) -> None:
    storage = storage_of(handle)
    tracker = _watched(storage, thread)
    if tracker is None:
        return
    size = access_type(_element(handle)).itemsize
    for where in np.unique(elements):
        tracker.read(int(where) * size, thread, site, storage.name)


def fill_fragment(
    fragment: object,
    m: int,
    n: int,
    k: int,
    index: int,
    value: float,
    thread: int = -1,
    site: int = -1,
) -> None:
    size = m * n
    verb = "T.tvm_fill_fragment writes"
    _write(fragment, index * size, np.full(size, value), np.arange(size), verb, thread, site)


def load_matrix_sync(
    fragment: object,
    m: int,
    n: int,
    k: int,
    index: int,
    pointer: object,
    stride: int,
    layout: str,
    thread: int = -1,
    site: int = -1,
) -> None:
    """`thread` and `site` (a kernel thread's number, the call's site) race-check the read."""
    rows, cols = operand_shape(storage_of(fragment).scope, m, n, k)
    values, start = _elements(pointer)
    major, minor = fragments.tile(rows, cols, layout == "row_major")
    source = start + major * stride + minor
    _check(pointer, source, len(values), "T.tvm_load_matrix_sync reads", site)
    _track_reads(pointer, source, thread, site)
    size = rows * cols
    _write(fragment, index * size, values[source], np.arange(size), "T.tvm_load_matrix_sync writes")


def store_matrix_sync(
    fragment: object,
    m: int,
    n: int,
    k: int,
    index: int,
    pointer: object,
    stride: int,
    layout: str,
    thread: int = -1,
    site: int = -1,
) -> None:
    """`thread` and `site` (a kernel thread's number, the call's site) race-check the write."""
    values, _ = _elements(fragment)
    size = m * n
    block = values[index * size : (index + 1) * size]
    _, start = _elements(pointer)
    major, minor = fragments.tile(m, n, layout == "row_major")
    verb = "T.tvm_store_matrix_sync writes"
    _write(pointer, start, block, major * stride + minor, verb, thread, site)


def mma_sync(
    d: object,
    d_index: int,
    a: object,
    a_index: int,
    b: object,
    b_index: int,
    c: object,
    c_index: int,
    thread: int = -1,
    site: int = -1,
    shape: tuple[int, int, int] = PLAIN_MMA_SHAPE,
) -> None:
    """D = A @ B + C on fragments of an mma of this (m, n, k) (analysis.wmma_fragments'
    mma_shape: D's, PLAIN_MMA_SHAPE on plain memory)."""
    a_values, _ = _elements(a)
    b_values, _ = _elements(b)
    c_values, _ = _elements(c)
    m, n, k = shape
    left = a_values[a_index * m * k : (a_index + 1) * m * k]
    right = b_values[b_index * k * n : (b_index + 1) * k * n]
    accumulator = c_values[c_index * m * n : (c_index + 1) * m * n]
    result = fragments.multiply_accumulate(left[None], right[None], accumulator[None], shape)[0]
    _write(d, d_index * m * n, result, np.arange(m * n), "T.tvm_mma_sync writes", thread, site)


INTRINSICS.setdefault("tvm_fill_fragment", fill_fragment)
INTRINSICS.setdefault("tvm_load_matrix_sync", load_matrix_sync)
INTRINSICS.setdefault("tvm_store_matrix_sync", store_matrix_sync)
INTRINSICS.setdefault("tvm_mma_sync", mma_sync)
