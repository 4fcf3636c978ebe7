"""Pipelines as data: a TOML file naming passes in order, with their options.

Two spellings, which may not be mixed in one file:

    [[pass]]                           passes = [
    name = "lower-init-block"              "lower-init-block",
    [[pass]]                               "unroll-loop{auto_max_step=16}",
    name = "unroll-loop"               ]
    auto_max_step = 16

A pipeline says what it leaves, the dialect the backend that reads its output needs
(`leaves = "tir-host-device"` at the top of the file; by default the furthest any of its
passes leaves), and the driver checks the lowered module against it. Unknown passes,
unknown options and values of the wrong type are errors located at their line.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import tomllib
import typing
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.diagnostics.span import Source, Span
from tirc.ir.target import Target
from tirc.transform.pass_base import Dialect, ModulePass
from tirc.transform.registry import lookup_pass

SHIPPED = ("cpu", "cuda")  # the files in tirc/transform/pipelines
_SPELLED = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*(?:\{(.*)\})?\s*$", re.S)
_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True)
class Pipeline:
    """Passes in the order they run; `name` says where they came from (a file, a target);
    `leaves` is the dialect of the module it makes."""

    name: str
    passes: tuple[ModulePass, ...]
    leaves: Dialect = Dialect.S_TIR

    def spelling(self) -> str:
        return ",".join(p.spelling() for p in self.passes)


def load_pipeline(path: str | Path) -> Pipeline:
    """The pipeline in a TOML file; DiagnosticError for a missing file or a bad one."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise DiagnosticError.at(None, f"cannot read pipeline {path}: {error.strerror}") from None
    return read_pipeline(text, name=str(path))


def default_pipeline(target: Target | str = "cpu") -> Pipeline:
    """The pipeline shipped with tirc for a target, or by its name (`cpu`, `cuda`)."""
    if isinstance(target, Target):
        if target.pipeline is None:
            raise DiagnosticError.at(
                None,
                f"target '{target}' lowers nothing: it has no pipeline",
                Note(f"lower for one of: {', '.join(SHIPPED)}"),
            )
        return _shipped(target.pipeline)
    if target not in SHIPPED:
        close = difflib.get_close_matches(target, SHIPPED, n=1)
        raise DiagnosticError.at(
            None,
            f"no pipeline is shipped for '{target}' (shipped: {', '.join(SHIPPED)})",
            *([Note(f"did you mean '{close[0]}'?")] if close else []),
        )
    return _shipped(target)


def shipped_pipeline_file(name: str) -> str:
    """The file of a shipped pipeline (a dependency of what it lowers, for a depfile)."""
    return str(resources.files("tirc.transform.pipelines").joinpath(f"{name}.toml"))


@functools.cache
def _shipped(file: str) -> Pipeline:
    """A shipped pipeline, read once per process (passes are immutable values)."""
    text = resources.files("tirc.transform.pipelines").joinpath(f"{file}.toml").read_text()
    return read_pipeline(text, name=f"<{file} pipeline>")


def read_pipeline(text: str, *, name: str = "<pipeline>") -> Pipeline:
    source = Source(name, text)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DiagnosticError.at(
            _toml_error_span(source, str(error)), _toml_message(error)
        ) from None
    reader = _Reader(source)
    passes = reader.read(document)
    leaves = reader.leaves(document.get("leaves"), passes)
    if reader.diagnostics:
        raise DiagnosticError(reader.diagnostics)
    return Pipeline(name, tuple(passes), leaves)


class _Reader:
    def __init__(self, source: Source):
        self.source = source
        self.lines = source.text.splitlines()
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, span: Span | None, *notes: Note) -> None:
        self.diagnostics.append(Diagnostic.error(message, span, *notes))

    def read(self, document: dict[str, object]) -> list[ModulePass]:
        unknown = [key for key in document if key not in ("pass", "passes", "leaves")]
        for key in unknown:
            self.error(
                f"unknown key '{key}' in a pipeline",
                self.key_span(key, 0, len(self.lines)),
                Note(
                    "a pipeline holds [[pass]] tables or a `passes = [...]` list, and "
                    "`leaves = DIALECT`"
                ),
            )
        tables, spelled = document.get("pass"), document.get("passes")
        if tables is not None and spelled is not None:
            self.error("a pipeline has both [[pass]] tables and a passes list", None)
            return []
        if isinstance(tables, list):
            return [p for i, t in enumerate(tables) if (p := self.from_table(i, t)) is not None]
        if isinstance(spelled, list):
            return [p for i, s in enumerate(spelled) if (p := self.from_string(i, s)) is not None]
        if tables is not None or spelled is not None:
            self.error("`pass` must be [[pass]] tables and `passes` a list of strings", None)
        return []

    def leaves(self, declared: object, passes: list[ModulePass]) -> Dialect:
        """The dialect the file declares, else the furthest its passes leave."""
        furthest = max((p.leaves for p in passes), key=lambda d: d.rank, default=Dialect.S_TIR)
        if declared is None:
            return furthest
        names = [d.value for d in Dialect]
        if declared not in names:
            close = difflib.get_close_matches(str(declared), names, n=1)
            self.error(
                f"unknown dialect {declared!r} for `leaves`",
                self.key_span("leaves", 0, len(self.lines)),
                *([Note(f"did you mean '{close[0]}'?")] if close else []),
                Note(f"dialects: {', '.join(names)}"),
            )
            return furthest
        return Dialect(declared)

    # -- the two spellings -------------------------------------------------------------------

    def from_table(self, index: int, table: object) -> ModulePass | None:
        begin, end = self.table_lines(index)
        header = self.line_span(begin)
        if not isinstance(table, dict) or not isinstance(table.get("name"), str):
            self.error('a [[pass]] table needs `name = "pass-name"`', header)
            return None
        options = {key: value for key, value in table.items() if key != "name"}
        spans = {key: self.key_span(key, begin, end) for key in table}
        return self.build(table["name"], options, spans.get("name") or header, spans)

    def from_string(self, index: int, spelled: object) -> ModulePass | None:
        span = self.string_span(spelled, index)
        match = _SPELLED.match(spelled) if isinstance(spelled, str) else None
        if match is None:
            self.error(f"cannot read pass {spelled!r}; write name or name{{opt=value,...}}", span)
            return None
        options: dict[str, object] = {}
        for item in filter(None, (part.strip() for part in (match.group(2) or "").split(","))):
            try:
                options.update(tomllib.loads(item))
            except tomllib.TOMLDecodeError:
                self.error(f"cannot read option '{item}'; write opt=value", span)
                return None
        return self.build(match.group(1), options, span, {key: span for key in options})

    # -- building a pass ---------------------------------------------------------------------

    def build(
        self,
        name: str,
        options: dict[str, object],
        span: Span | None,
        spans: dict[str, Span | None],
    ) -> ModulePass | None:
        try:
            klass = lookup_pass(name, span)
        except DiagnosticError as error:
            self.diagnostics += error.diagnostics
            return None
        fields = {field.name: field for field in dataclasses.fields(klass)}
        hints = typing.get_type_hints(klass)
        good = True
        for key, value in options.items():
            where = spans.get(key) or span
            if key not in fields:
                close = difflib.get_close_matches(key, list(fields), n=1)
                notes = [Note(f"did you mean '{close[0]}'?")] if close else []
                notes.append(Note(f"options of {name}: {', '.join(fields) or 'none'}"))
                self.error(f"pass '{name}' has no option '{key}'", where, *notes)
                good = False
            elif not _fits(value, hints[key]):
                wanted = getattr(hints[key], "__name__", str(hints[key]))
                self.error(f"option '{key}' of pass '{name}' takes {wanted}, not {value!r}", where)
                good = False
        if not good:
            return None
        try:
            return klass(**options)
        except ValueError as error:
            self.error(f"pass '{name}': {error}", span)
            return None

    # -- locating things in the text (tomllib gives values, not positions) -------------------

    def table_lines(self, index: int) -> tuple[int, int]:
        headers = [
            i for i, line in enumerate(self.lines) if re.match(r"\s*\[\[\s*pass\s*\]\]", line)
        ]
        if index >= len(headers):
            return 0, len(self.lines)
        begin = headers[index]
        end = next(
            (i for i in range(begin + 1, len(self.lines)) if re.match(r"\s*\[", self.lines[i])),
            len(self.lines),
        )
        return begin, end

    def key_span(self, key: str, begin: int, end: int) -> Span | None:
        pattern = re.compile(rf"\s*\"?{re.escape(key)}\"?\s*=")
        for number in range(begin, end):
            if pattern.match(self.lines[number]):
                return self.line_span(number)
        return None

    def string_span(self, spelled: object, index: int) -> Span | None:
        if not isinstance(spelled, str):
            return None
        needle_offsets = [m.start() for m in re.finditer(re.escape(spelled), self.source.text)]
        if not needle_offsets:
            return None
        offset = needle_offsets[min(index, len(needle_offsets) - 1)]
        return Span(self.source, offset, offset + len(spelled))

    def line_span(self, number: int) -> Span | None:
        starts = self.source.line_starts()
        if number >= len(starts):
            return None
        line = self.lines[number]
        indent = len(line) - len(line.lstrip())
        return Span(self.source, starts[number] + indent, starts[number] + len(line))


def _fits(value: object, hint: object) -> bool:
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True


def _toml_error_span(source: Source, message: str) -> Span | None:
    match = _TOML_POSITION.search(message)
    if match is None:
        return None
    line, column = int(match.group(1)), int(match.group(2))
    starts = source.line_starts()
    if line > len(starts):
        return None
    offset = min(starts[line - 1] + column - 1, len(source.text))
    return Span(source, offset, offset + 1)


def _toml_message(error: tomllib.TOMLDecodeError) -> str:
    return "invalid TOML: " + _TOML_POSITION.sub("", str(error)).strip()
