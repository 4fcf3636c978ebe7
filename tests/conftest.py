"""Suite-wide collection and scheduling rules."""

from __future__ import annotations

from typing import Any

import pytest

# The files that hold the longest tests, longest first (measured with `pytest -n 2 --durations=80`
# on the default and the slow set, session 17). They run first: xdist's work stealing (below)
# then ends the run on short tests, where the default order, by path, left a worker on a
# minute-long tune or thread-model test while the other idled.
# A file missing here only runs in its usual place.
LONGEST_FIRST = (
    "tests/codegen/test_compile.py",
    "tests/cli/test_help_examples.py",
    "tests/api/test_tvm_ffi_cuda.py",
    "tests/tune/test_tune_command.py",
    "tests/transform/test_warp_specialize_wgmma.py",
    "tests/codegen_cuda/test_hopper_gemm.py",
    "tests/codegen_cuda/test_wgmma_swizzle.py",
    "tests/tune/test_measure_gpu.py",
    "tests/transform/test_defer_wgmma_wait.py",
    "tests/samples/test_samples_make.py",
    "tests/driver/test_kill.py",
    "tests/tune/test_workers.py",
    "tests/tune/test_tensorize.py",
    "tests/tune/test_rules.py",
    "tests/tune/test_tune_everything.py",
    "tests/docs/test_docs_shell_blocks.py",
    "tests/transform/test_warp_specialize.py",
    "tests/transform/test_named_barrier_sync.py",
    "tests/codegen_cuda/test_wgmma_library.py",
    "tests/codegen_cuda/test_wgmma.py",
    "tests/driver/test_run_cuda_cases.py",
    "tests/codegen_cuda/test_warp_specialized.py",
    "tests/codegen_cuda/test_conformance_cuda.py",
    "tests/samples/test_bandwidth_samples.py",
    "tests/interp/test_wgmma_async_reads.py",
    "tests/codegen_cuda/test_sass_mainloop.py",
    "tests/codegen_cuda/test_tma.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A `sweep` test is a `slow` one too, before `-m` selects: the README's `-m "not slow"`
    and CI's `-m "slow and not sweep"` both leave it to `make test-sweep`. Then the files of
    LONGEST_FIRST move to the front, each file's tests kept together and in order."""
    for item in items:
        if item.get_closest_marker("sweep") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`-n N` steals work (`--dist worksteal`) unless another --dist was asked for: each worker
    starts on half the tests, and an idle one takes half of what the other has left, where the
    default `load` hands out fixed chunks in order. (Not in pytest's addopts: a Python without
    pytest-xdist, as `make gpu-check` allows, would refuse the option.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)
