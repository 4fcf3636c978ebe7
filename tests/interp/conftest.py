import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: takes more than a few seconds (deselect with -m 'not slow')"
    )
