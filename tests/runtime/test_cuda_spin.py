"""The kernel that timed calls queue behind (tirc.runtime.cuda_spin), on the fake driver: its
PTX loads, it launches one thread with a cycle count for the time asked, and its module is
released with the run's other driver objects."""

from __future__ import annotations

from tests.runtime.fake_cuda import FakeDriver, fake_device, parse_ptx
from tirc.runtime.cuda_driver import Releases
from tirc.runtime.cuda_spin import FALLBACK_HERTZ, PTX, Spinner


def test_the_ptx_has_one_kernel_of_one_u64() -> None:
    (entry,) = parse_ptx(PTX).values()
    assert entry.name == "tirc_spin"
    assert [(p.kind, p.bytes) for p in entry.params] == [("u", 8)]


def test_it_spins_for_the_cycles_of_the_time_asked_and_is_released() -> None:
    fake = FakeDriver()
    device = fake_device(fake)
    with Releases(device) as releases:
        spin = Spinner.load(device, releases)
        stream = device.call("cuStreamCreate", 0)
        releases.add("cuStreamDestroy", stream)
        spin.launch(stream, seconds=2e-3)
    (launch,) = fake.launches
    assert launch.kernel == "tirc_spin" and launch.grid == (1, 1, 1) and launch.block == (1, 1, 1)
    # the fake has no clock rate: the fallback, above any GPU's, only spins longer
    assert launch.args == (("u64", int(2e-3 * spin.hertz)),)
    assert spin.hertz == FALLBACK_HERTZ
    assert fake.leaks() == []
