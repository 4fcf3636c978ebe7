"""`tirc run --bench` on a busy machine: idle OpenMP threads are told to sleep soon unless the
user chose a wait policy, and the report says the machine was busy; a quiet machine is left
as it is. And the run summary's line per buffer: statistics and a checksum."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tirc.driver import openmp_policy
from tirc.driver.openmp_policy import prepare_for_bench
from tirc.driver.value_summary import describe_values


@pytest.fixture
def no_policy(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in openmp_policy.POLICY_VARIABLES:
        monkeypatch.setenv(name, "")  # recorded, so that what a test sets is undone
        monkeypatch.delenv(name)
    return monkeypatch


def test_a_busy_machine_gets_a_short_spin(no_policy: pytest.MonkeyPatch) -> None:
    no_policy.setattr(openmp_policy, "machine_load", lambda: (9.5, 2))
    note = prepare_for_bench()
    assert note is not None and "busy (load average 9.5 on 2 cores)" in note
    assert os.environ["GOMP_SPINCOUNT"] == "1000"


def test_the_users_policy_is_kept(no_policy: pytest.MonkeyPatch) -> None:
    no_policy.setattr(openmp_policy, "machine_load", lambda: (4.0, 2))
    no_policy.setenv("OMP_WAIT_POLICY", "active")
    note = prepare_for_bench()
    assert note is not None and "OMP_WAIT_POLICY is set as you chose" in note
    assert "GOMP_SPINCOUNT" not in os.environ


def test_a_quiet_machine_is_left_alone(no_policy: pytest.MonkeyPatch) -> None:
    no_policy.setattr(openmp_policy, "machine_load", lambda: (0.5, 2))
    assert prepare_for_bench() is None
    assert "GOMP_SPINCOUNT" not in os.environ


def test_buffer_statistics_and_checksum() -> None:
    line = describe_values(np.array([1.0, 2.0, np.nan, 5.0], dtype=np.float32))
    assert line.startswith("mean 2.667  min 1  max 5  1 not finite  crc32 ")
    assert describe_values(np.zeros((0, 3))) == "empty"
    same = describe_values(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert same == describe_values(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert same.split("crc32 ")[1] != describe_values(np.arange(1, 7, dtype=np.int32))[-8:]
