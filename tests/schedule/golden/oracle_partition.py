"""Regenerate the expected halves of the golden pairs of rolling_buffer and blockize of a list
of blocks with Apache TVM 0.27 (the oracle), by the rules of
oracle_reductions.py (oracle_common.regenerate).

Run under a Python that has TVM: `/work/tvm-venv/bin/python
tests/schedule/golden/oracle_partition.py`. (loop_partition's pairs come from oracle_loops.py.)
"""

import groups
from oracle_common import regenerate

FOLDERS = groups.PARTITION


def main() -> None:
    regenerate(FOLDERS)


if __name__ == "__main__":
    main()
