"""The cost model: predicts how fast a candidate runs from its features, trained online.

With xgboost installed (`pip install tirc[tune]`), a gradient-boosted regressor is refitted on
every measured candidate after each round; it predicts the candidate's throughput relative to
the best measured so far (1.0 = as fast). Without it, or before enough candidates have been
measured, every candidate scores the same and the search picks at random.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MIN_SAMPLES = 8


def has_xgboost() -> bool:
    try:
        import xgboost  # noqa: F401  # deferred: xgboost is the optional tune extra
    except ImportError:
        return False
    return True


class CostModel:
    def __init__(self, use_xgboost: bool | None = None):
        self.enabled = has_xgboost() if use_xgboost is None else use_xgboost
        self.model: Any = None
        self.features: list[list[float]] = []
        self.seconds: list[float | None] = []

    @property
    def name(self) -> str:
        return "xgboost" if self.enabled else "none (random search; install tirc[tune])"

    def add(self, features: list[float], seconds: float | None) -> None:
        """A measured candidate: its time, or None when it failed (scored 0)."""
        self.features.append(features)
        self.seconds.append(seconds)

    def fit(self) -> None:
        timed = [s for s in self.seconds if s]
        if not self.enabled or len(timed) < MIN_SAMPLES:
            return
        import xgboost  # deferred: the optional tune extra

        best = min(timed)
        labels = [best / s if s else 0.0 for s in self.seconds]
        data = xgboost.DMatrix(np.array(self.features, dtype=np.float64), label=np.array(labels))
        parameters = {"max_depth": 6, "eta": 0.2, "nthread": 1, "verbosity": 0}
        self.model = xgboost.train(parameters, data, num_boost_round=60)

    def predict(self, features: list[list[float]]) -> list[float]:
        if self.model is None or not features:
            return [0.0] * len(features)
        import xgboost  # deferred: the optional tune extra

        predicted = self.model.predict(xgboost.DMatrix(np.array(features, dtype=np.float64)))
        return [float(value) for value in predicted]
