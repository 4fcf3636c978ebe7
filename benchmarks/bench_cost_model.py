"""How well the tuner's cost model ranks measured candidates, by feature set, held out.

Reads a tuning database (`tirc tune --db`), replays each measured plan on its kernel
(samples/bench/<name>.tir, matched by workload key), and extracts three feature sets:
`scheduled` (features.py, read from the scheduled program), `lowered` (lowered_features.py,
read from the program lowered up to unroll-loop) and `both`, each followed by the decision
values, as search.candidate_features does. For each set and workload, the CostModel the tuner
uses (xgboost) is trained and scored on held-out candidates two ways:

- online: trained on the first N measured (N = 32, 64, ... as the tuner would have them),
  tested on the rest: Spearman's rho between predicted score and measured throughput, and
  top-8 (the best throughput among the 8 the model ranks first, over the best there is);
- 5-fold: candidates shuffled (3 seeds), rho on each held-out fifth, averaged.

Not a test: `python benchmarks/bench_cost_model.py --db tune.db`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tirc.driver.target import parse_target  # noqa: E402
from tirc.schedule.apply import apply_plan  # noqa: E402
from tirc.schedule.plan import read_plan  # noqa: E402
from tirc.tune.cost_model import CostModel  # noqa: E402
from tirc.tune.database import Database  # noqa: E402
from tirc.tune.features import features as scheduled_features  # noqa: E402
from tirc.tune.lowered_features import lowered_features  # noqa: E402
from tirc.tune.search import decision_features  # noqa: E402
from tirc.tune.task import load_task  # noqa: E402

SETS = ("scheduled", "lowered", "both")
TOP = 8


def kernels(threads: int) -> dict[str, tuple[str, object]]:
    """Workload key -> (kernel name, task) for every kernel of samples/bench."""
    found = {}
    for path in sorted((ROOT / "samples" / "bench").glob("*.tir")):
        task = load_task(path.read_text(), str(path), {}, None, parse_target("cpu"), threads)
        found[task.key] = (path.stem, task)
    return found


def extract(task: object, rows: list) -> tuple[dict[str, list[list[float]]], list[float], float]:
    sets: dict[str, list[list[float]]] = {name: [] for name in SETS}
    speeds: list[float] = []
    lowering = 0.0
    for row in rows:
        if not row.seconds:
            continue
        try:
            module, _ = apply_plan(task.module, read_plan(row.plan, "<database>"))
        except Exception:  # a plan this tirc no longer replays
            continue
        begin = time.perf_counter()
        lowered = lowered_features(module, task.func, "cpu")
        lowering += time.perf_counter() - begin
        scheduled = scheduled_features(module[task.func])
        decisions = decision_features(row.decisions)
        sets["scheduled"].append(scheduled + decisions)
        sets["lowered"].append(lowered + decisions)
        sets["both"].append(scheduled + lowered + decisions)
        speeds.append(1.0 / row.seconds)
    return sets, speeds, lowering / max(len(speeds), 1)


def model_scores(train: list[list[float]], seconds: list[float], test: list[list[float]]) -> list:
    model = CostModel(use_xgboost=True)
    for values, time_ in zip(train, seconds, strict=True):
        model.add(values, time_)
    model.fit()
    return model.predict(test)


def online(values: list[list[float]], speeds: list[float]) -> tuple[float, float]:
    rhos, tops = [], []
    for n in range(32, len(values) - 16, 32):
        scores = model_scores(values[:n], [1 / s for s in speeds[:n]], values[n:])
        held = speeds[n:]
        rhos.append(spearmanr(scores, held).statistic)
        ranked = sorted(range(len(held)), key=lambda i: -scores[i])[:TOP]
        tops.append(max(held[i] for i in ranked) / max(held))
    return statistics.mean(rhos), statistics.mean(tops)


def folds(values: list[list[float]], speeds: list[float]) -> float:
    rhos = []
    for seed in range(3):
        order = list(range(len(values)))
        random.Random(seed).shuffle(order)
        for fold in range(5):
            test = order[fold::5]
            train = [i for i in order if i not in set(test)]
            scores = model_scores(
                [values[i] for i in train],
                [1 / speeds[i] for i in train],
                [values[i] for i in test],
            )
            rhos.append(spearmanr(scores, [speeds[i] for i in test]).statistic)
    return float(np.mean(rhos))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--threads", type=int, default=1, help="the workloads' thread count")
    args = parser.parse_args()
    database = Database(args.db)
    known = kernels(args.threads)
    header = ("kernel", "rows", "features", "online rho", "top-8", "5-fold rho")
    print("{:<12} {:>4} {:<10} {:>10} {:>6} {:>10}".format(*header))
    for key, (name, task) in known.items():
        rows = database.rows(key)
        if len(rows) < 64:
            continue
        sets, speeds, lowering = extract(task, rows)
        for set_name in SETS:
            rho, top = online(sets[set_name], speeds)
            fold_rho = folds(sets[set_name], speeds)
            row = (name, len(speeds), set_name, rho, top, fold_rho)
            print("{:<12} {:>4} {:<10} {:>10.3f} {:>6.3f} {:>10.3f}".format(*row))
        print(f"{name:<12} lowering for features: {lowering * 1000:.0f} ms a candidate")


if __name__ == "__main__":
    main()
