"""The hot loop of x86-64 assembly (AT&T syntax, as LLVM prints it) and its register traffic:
how many vector instructions spill to or reload from the stack, and how many copy one
register to another. A register tile that fits the target's vector registers has none."""

from __future__ import annotations

import re
from dataclasses import dataclass

LABEL = re.compile(r"^([.\w$]+):")
JUMP = re.compile(r"^\s+j[a-z]+\s+([.\w$]+)\s*$")
FMA = re.compile(r"^\s+v?f(n)?m(add|sub)\w*\s")
VECTOR_MOVE = re.compile(
    r"^\s+v?mov(ups|aps|upd|apd|dqu|dqa|dqu32|dqu64|dqa32|dqa64|ss|sd)\s+(.*)$"
)
STACK = re.compile(r"-?\d*\((%rsp|%rbp)\)")
VECTOR_REGISTER = re.compile(r"^%[xyz]mm\d+$")


@dataclass(frozen=True)
class LoopTraffic:
    """One loop of the assembly: its instructions, and of them the multiply-adds, the
    vector stores to the stack (spills), the vector loads from it (reloads, counting
    multiply-adds that read an operand from the stack) and the register-to-register
    vector copies."""

    label: str
    lines: tuple[int, int]  # where it starts and ends among instruction_lines()
    instructions: int
    fmas: int
    spills: int
    reloads: int
    copies: int

    @property
    def stack_accesses(self) -> int:
        return self.spills + self.reloads


def instruction_lines(assembly: str) -> list[str]:
    """Labels and instructions, without comments, directives and blank lines."""
    lines = []
    for raw in assembly.splitlines():
        text = raw.split("#", 1)[0].rstrip()
        if not text.strip() or text.lstrip().startswith("."):
            if LABEL.match(text.strip()):  # `.LBB0_3:` starts with a dot but is a label
                lines.append(text.strip())
            continue
        lines.append(text)
    return lines


def loops(assembly: str) -> list[LoopTraffic]:
    """Every loop that a backward jump closes: the instructions from its label to the jump."""
    lines = instruction_lines(assembly)
    where: dict[str, int] = {}
    found = []
    for index, text in enumerate(lines):
        label = LABEL.match(text)
        if label:
            where[label.group(1)] = index
            continue
        jump = JUMP.match(text)
        if jump and jump.group(1) in where:
            start = where[jump.group(1)]
            found.append(traffic(jump.group(1), (start, index), lines[start + 1 : index + 1]))
    return found


def traffic(label: str, where: tuple[int, int], body: list[str]) -> LoopTraffic:
    instructions = [text for text in body if not LABEL.match(text)]
    fmas = spills = reloads = copies = 0
    for text in instructions:
        if FMA.match(text):
            fmas += 1
            if STACK.search(text):
                reloads += 1
            continue
        move = VECTOR_MOVE.match(text)
        if move is None:
            continue
        operands = [operand.strip() for operand in split_operands(move.group(2))]
        if len(operands) != 2:
            continue
        source, destination = operands
        if STACK.fullmatch(destination) and VECTOR_REGISTER.match(source):
            spills += 1
        elif STACK.fullmatch(source) and VECTOR_REGISTER.match(destination):
            reloads += 1
        elif VECTOR_REGISTER.match(source) and VECTOR_REGISTER.match(destination):
            copies += 1
    return LoopTraffic(label, where, len(instructions), fmas, spills, reloads, copies)


def split_operands(text: str) -> list[str]:
    """Operands separated by the commas outside parentheses (`8(%rsp,%rax,4), %ymm0`)."""
    operands, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            operands.append(current)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    operands.append(current)
    return operands


def hot_loop(assembly: str) -> LoopTraffic | None:
    """Of the innermost loops with multiply-adds (those with no such loop inside), the one
    with the most; None when no loop has a multiply-add."""
    candidates = [loop for loop in loops(assembly) if loop.fmas]
    innermost = [
        loop
        for loop in candidates
        if not any(other is not loop and contains(loop, other) for other in candidates)
    ]
    if not innermost:
        return None
    return max(innermost, key=lambda loop: loop.fmas)


def contains(outer: LoopTraffic, inner: LoopTraffic) -> bool:
    return outer.lines[0] <= inner.lines[0] and inner.lines[1] <= outer.lines[1]
