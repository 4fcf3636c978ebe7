"""The tuning database: one SQLite row per measured candidate.

A row holds the workload key (tirc.tune.task.Task.key), the target, the plan (readable JSON,
decisions included), the candidate's decisions, its status, the median seconds of a call and
when it was measured. A second run of `tirc tune` reads the rows of its workload back: they
seed the search and are never measured again; `tirc tune --report` lists the best of each.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import DiagnosticError

SCHEMA = """
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY,
    workload TEXT NOT NULL,
    target TEXT NOT NULL,
    plan TEXT NOT NULL,
    decisions TEXT NOT NULL,
    status TEXT NOT NULL,
    seconds REAL,
    flops INTEGER,
    message TEXT NOT NULL DEFAULT '',
    measured_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS by_workload ON measurements (workload, seconds);
"""


@dataclass
class Row:
    workload: str
    target: str
    plan: str
    decisions: list[Any]
    status: str
    seconds: float | None
    flops: int | None
    message: str = ""


class Database:
    def __init__(self, path: str):
        self.path = path
        try:
            self.connection = sqlite3.connect(path, timeout=30)
            self.connection.executescript(SCHEMA)
        except sqlite3.DatabaseError as error:
            raise DiagnosticError.at(
                None, f"cannot use '{path}' as a tuning database: {error}"
            ) from None

    def close(self) -> None:
        self.connection.close()

    def add(self, row: Row) -> None:
        with self.connection:
            self.connection.execute(
                "INSERT INTO measurements (workload, target, plan, decisions, status, seconds, "
                "flops, message, measured_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.workload,
                    row.target,
                    row.plan,
                    json.dumps(row.decisions),
                    row.status,
                    row.seconds,
                    row.flops,
                    row.message,
                    time.time(),
                ),
            )

    def rows(self, workload: str) -> list[Row]:
        cursor = self.connection.execute(
            "SELECT workload, target, plan, decisions, status, seconds, flops, message "
            "FROM measurements WHERE workload = ? ORDER BY id",
            (workload,),
        )
        return [_row(values) for values in cursor]

    def best(self, workload: str) -> Row | None:
        cursor = self.connection.execute(
            "SELECT workload, target, plan, decisions, status, seconds, flops, message "
            "FROM measurements WHERE workload = ? AND status = 'ok' ORDER BY seconds LIMIT 1",
            (workload,),
        )
        found = cursor.fetchone()
        return _row(found) if found else None

    def summary(self) -> list[tuple[str, str, int, int, float | None, int | None, str | None]]:
        """Per workload: key, target, rows, good rows, best seconds, flops, best plan."""
        cursor = self.connection.execute(
            "SELECT workload, target, COUNT(*), SUM(status = 'ok' OR status = 'built'), "
            "MIN(seconds) FROM measurements GROUP BY workload, target ORDER BY workload"
        )
        result = []
        for workload, target, count, good, seconds in cursor.fetchall():
            best = self.best(workload)
            flops = best.flops if best else None
            plan = best.plan if best else None
            result.append((workload, target, count, good or 0, seconds, flops, plan))
        return result


def _row(values: tuple[Any, ...]) -> Row:
    workload, target, plan, decisions, status, seconds, flops, message = values
    return Row(workload, target, plan, json.loads(decisions), status, seconds, flops, message)
