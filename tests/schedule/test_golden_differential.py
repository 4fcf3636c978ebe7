"""The interpreter on the golden pairs outside the loop and layout groups (whose own tests run
it, the layouts' under a `# sizes:` header): where a before half has a `# differential:`
header (the shape variables, `{}` for none), the scheduled program must compute what the
original does. The pairs the random-plan differential found (tests/schedule/
tvm_random_plans.py) carry that header.
"""

from __future__ import annotations

from pathlib import Path

from tests.schedule.golden import groups
from tests.schedule.golden_runner import assert_same_results, cases, check_golden, golden, header

FOLDERS = tuple(
    folder
    for group in (groups.ANNOTATIONS, groups.REDUCTIONS, groups.TENSORIZE, groups.PARTITION)
    + (groups.CACHES, groups.FUSION)
    for folder in group
)
CASES = [path for path in cases(FOLDERS) if header(path.read_text(), "differential") is not None]


@golden("before", CASES)
def test_scheduled_program_computes_the_same(before: Path) -> None:
    result = check_golden(before)
    assert result is not None, "a differential case must be accepted"
    assert_same_results(before, result[1])
