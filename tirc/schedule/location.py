"""Where a block may be computed, besides under a loop: at the root of its scope, or inlined.

sample_compute_location gives one of these or a loop; compute_at reads them.
"""

from __future__ import annotations

import enum


class LocationMark(enum.Enum):
    ROOT = -1  # at the scope root, outside every loop
    INLINE = -2  # inlined into its consumers

    def __str__(self) -> str:
        return f"the {self.name.lower()} mark"
