"""Regenerate the expected halves of the golden pairs of rolling_buffer and blockize of a list
of blocks with Apache TVM 0.27 (the oracle), by the rules of
oracle_reductions.py, whose loop this reuses.

Run under a Python that has TVM: `/work/tvm-venv/bin/python
tests/schedule/golden/oracle_partition.py`. (loop_partition's pairs come from oracle_loops.py.)
"""

import oracle_reductions

oracle_reductions.FOLDERS = ("rolling_buffer", "blockize_blocks")

if __name__ == "__main__":
    oracle_reductions.main()
