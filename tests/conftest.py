"""Suite-wide collection rules."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A `sweep` test is a `slow` one too, before `-m` selects: the README's `-m "not slow"`
    and CI's `-m "slow and not sweep"` both leave it to `make test-sweep`."""
    for item in items:
        if item.get_closest_marker("sweep") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
