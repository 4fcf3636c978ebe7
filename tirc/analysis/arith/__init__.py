"""Integer arithmetic analysis: constant bounds, a canonical form for index expressions, a
simplifier and a prover. Pure functions over the IR; an Analyzer carries known variable ranges.
"""

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.bound import Bound

__all__ = ["Analyzer", "Bound"]
