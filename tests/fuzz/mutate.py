"""Mutations of program text: each takes the text and a random source and returns a variant
that is usually almost right, which is where a parser's error paths live.

The operators are the classic ones (characters deleted, tokens inserted, lines duplicated,
deleted or swapped, numbers and identifiers replaced, indentation changed) with token lists
taken from tirc itself: the grammar's keywords and operators and the `T` namespace's names.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence

NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?(?![\w.])")
IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
STRING = re.compile(r'"[^"\n]*"')
LINE_START = re.compile(r"^[ \t]*", re.MULTILINE)

# Numbers that sit on the edges of what tirc's types hold, or are of the wrong kind.
SPECIAL_NUMBERS = (
    "0",
    "-1",
    "1",
    "1.5",
    "0.0",
    "-0.5",
    "2147483647",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "100000000000000000000000000000",
    "1e300",
    "1e400",
    "1e-400",
    "0x7fffffff",
    "0xffffffffffffffff",
    "65",
)
STRINGS = (
    '"float32"',
    '"float16"',
    '"int8"',
    '"int64"',
    '"uint8"',
    '"bool"',
    '"handle"',
    '"float32x4"',
    '"int32x8"',
    '"bfloat16"',
    '"float8_e4m3fn"',
    '"void"',
    '""',
    '"global"',
    '"shared"',
    '"shared.dyn"',
    '"local"',
    '"warp"',
    '"threadIdx.x"',
    '"blockIdx.x"',
    '"vthread"',
    '"SSR"',
    '"S"',
    '"RRS"',
    '"main"',
    '"pragma_unroll"',
    '"x\\n"',
)
OPERATORS = (
    "+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "~", "<", ">", "==", "!=",
    "<=", ">=", "=", "+=", "-=", "*=", ",", ":", ";", ".", "(", ")", "[", "]", "{", "}", "@",
    "->", "\\", "#", "'", '"', "\t", "\n", " ",
)  # fmt: skip
LITERALS = ("None", "True", "False", "0", "1", "-1", "1.5", "()", "[]", "{}", "x", "lambda i: i")


@functools.cache
def grammar_keywords() -> tuple[str, ...]:
    from tirc.text.syntax.grammar import grammar

    return tuple(sorted(grammar().lexer.keywords))


@functools.cache
def namespace_names() -> tuple[str, ...]:
    """`T.exp`, `T.axis.reduce`, ...: every name the T and I namespaces define (vector
    dtype constructors but a few, or they would crowd out the rest)."""
    from tirc.text.builder.namespace import global_names
    from tirc.text.builder.values import Namespace

    names: list[str] = ["range", "T", "I"]

    def walk(prefix: str, namespace: Namespace) -> None:
        for member, value in namespace.members.items():
            if re.fullmatch(r"\w+x(?!4$|8$)\d+", member):
                continue
            names.append(f"{prefix}.{member}")
            if isinstance(value, Namespace):
                walk(f"{prefix}.{member}", value)

    for prefix, value in global_names().items():
        if isinstance(value, Namespace):
            walk(prefix, value)
    return tuple(names)


@functools.cache
def tokens() -> tuple[str, ...]:
    return grammar_keywords() + OPERATORS + LITERALS + STRINGS + namespace_names()


Mutation = Callable[[str, random.Random], str]


def delete_characters(text: str, rng: random.Random) -> str:
    if not text:
        return text
    start = rng.randrange(len(text))
    width = rng.choice((1, 1, 1, 2, 3, rng.randint(1, 40)))
    return text[:start] + text[start + width :]


def insert_token(text: str, rng: random.Random) -> str:
    position = token_boundary(text, rng)
    token = rng.choice(tokens())
    before = rng.choice(("", " ", ""))
    after = rng.choice(("", " ", " "))
    return text[:position] + before + token + after + text[position:]


def insert_call(text: str, rng: random.Random) -> str:
    """A `T.name(...)` call with arguments taken from the program, where an operand was."""
    matches = list(IDENTIFIER.finditer(text)) + list(NUMBER.finditer(text))
    if not matches:
        return insert_token(text, rng)
    target = rng.choice(matches)
    name = rng.choice(namespace_names())
    operands = [m.group() for m in rng.sample(matches, min(len(matches), rng.randint(0, 3)))]
    call = f"{name}({', '.join(operands)})"
    return text[: target.start()] + call + text[target.end() :]


def duplicate_line(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    index = rng.randrange(len(lines))
    where = index + 1 if rng.random() < 0.7 else rng.randrange(len(lines) + 1)
    lines.insert(where, lines[index])
    return "\n".join(lines)


def delete_line(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    index = rng.randrange(len(lines))
    count = rng.choice((1, 1, 1, 2, 3))
    del lines[index : index + count]
    return "\n".join(lines)


def swap_lines(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    index = rng.randrange(len(lines) - 1)
    other = index + 1 if rng.random() < 0.7 else rng.randrange(len(lines))
    lines[index], lines[other] = lines[other], lines[index]
    return "\n".join(lines)


def replace_number(text: str, rng: random.Random) -> str:
    matches = list(NUMBER.finditer(text))
    if not matches:
        return insert_token(text, rng)
    target = rng.choice(matches)
    roll = rng.random()
    if roll < 0.6:
        replacement = rng.choice(SPECIAL_NUMBERS)
    elif roll < 0.85:
        replacement = rng.choice(matches).group()
    else:
        replacement = str(rng.choice((rng.randint(-3, 300), rng.randint(2, 2**40))))
    return text[: target.start()] + replacement + text[target.end() :]


def swap_identifier(text: str, rng: random.Random) -> str:
    matches = list(IDENTIFIER.finditer(text))
    if not matches:
        return insert_token(text, rng)
    target = rng.choice(matches)
    if rng.random() < 0.8:
        replacement = rng.choice(matches).group()
    else:
        replacement = rng.choice(grammar_keywords() + ("T", "I", "range", "main", "x"))
    return text[: target.start()] + replacement + text[target.end() :]


def swap_attribute(text: str, rng: random.Random) -> str:
    """`T.something` becomes another name of the namespace (a cast becomes a loop kind...)."""
    matches = list(re.finditer(r"\bT(?:\.\w+)+", text))
    if not matches:
        return swap_identifier(text, rng)
    target = rng.choice(matches)
    return text[: target.start()] + rng.choice(namespace_names()) + text[target.end() :]


def replace_string(text: str, rng: random.Random) -> str:
    matches = list(STRING.finditer(text))
    if not matches:
        return insert_token(text, rng)
    target = rng.choice(matches)
    replacement = rng.choice(STRINGS) if rng.random() < 0.8 else rng.choice(matches).group()
    return text[: target.start()] + replacement + text[target.end() :]


def change_indentation(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    index = rng.randrange(len(lines))
    line = lines[index]
    indent = len(line) - len(line.lstrip(" \t"))
    body = line[indent:]
    choice = rng.randrange(6)
    if choice == 0:
        new_indent = line[:indent] + " " * rng.choice((1, 2, 4))
    elif choice == 1:
        new_indent = line[: max(0, indent - rng.choice((1, 2, 4)))]
    elif choice == 2:
        new_indent = line[:indent].replace("    ", "\t", 1)
    elif choice == 3:
        new_indent = ""
    elif choice == 4:
        new_indent = line[:indent] + "\t"
    else:
        # a whole block moves: this line and the following more-indented ones
        shift = rng.choice((" ", "  ", "    ", "\t"))
        end = index + 1
        while end < len(lines) and (
            len(lines[end]) - len(lines[end].lstrip(" \t")) > indent or not lines[end].strip()
        ):
            end += 1
        for moved in range(index, end):
            lines[moved] = shift + lines[moved]
        return "\n".join(lines)
    lines[index] = new_indent + body
    return "\n".join(lines)


def splice_line(text: str, rng: random.Random, donors: Sequence[str] = ()) -> str:
    """A line of another program, at this line's indentation."""
    if not donors:
        return duplicate_line(text, rng)
    donor_lines = [line for line in rng.choice(donors).split("\n") if line.strip()]
    lines = text.split("\n")
    if not donor_lines:
        return text
    index = rng.randrange(len(lines))
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip(" \t"))]
    lines.insert(index, indent + rng.choice(donor_lines).lstrip(" \t"))
    return "\n".join(lines)


def token_boundary(text: str, rng: random.Random) -> int:
    """A place between tokens, most of the time; anywhere, some of the time."""
    if not text or rng.random() < 0.2:
        return rng.randrange(len(text) + 1)
    boundaries = [m.start() for m in re.finditer(r"\b|(?<=\s)|(?=[()\[\],:])", text)]
    return rng.choice(boundaries) if boundaries else 0


MUTATIONS: tuple[tuple[Mutation, float], ...] = (
    (delete_characters, 2.0),
    (insert_token, 2.0),
    (insert_call, 1.0),
    (duplicate_line, 1.0),
    (delete_line, 1.0),
    (swap_lines, 0.5),
    (replace_number, 2.5),
    (swap_identifier, 1.5),
    (swap_attribute, 1.5),
    (replace_string, 1.0),
    (change_indentation, 1.0),
)


def mutate(text: str, rng: random.Random, donors: Sequence[str] = ()) -> str:
    """`text` after one to a few random mutations."""
    operators = [operator for operator, _ in MUTATIONS] + [splice_line]
    weights = [weight for _, weight in MUTATIONS] + [0.5]
    count = 1
    while count < 6 and rng.random() < 0.35:
        count += 1
    for operator in rng.choices(operators, weights, k=count):
        if operator is splice_line:
            text = splice_line(text, rng, donors)
        else:
            text = operator(text, rng)
    return text
