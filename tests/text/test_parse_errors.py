"""Bad input: each error is a located diagnostic in plain words, never a Python traceback.

Each case marks the line of the expected error with `# error@COLUMN: words of the message`.
"""

from __future__ import annotations

import time

import pytest

from tests.text.parse_helpers import FUNCTION_HEAD, check_marked, expect_error

HEAD = FUNCTION_HEAD  # line 1: @T.prim_func, line 2: def main(A: float32[16], n: int32)

CASES = {
    "undefined name with suggestion": HEAD
    + "    A[0] = A[1] + nn  # error@19: undefined name 'nn'; did you mean 'n'?\n",
    "undefined buffer": HEAD + "    A[0] = B[0]  # error@12: undefined name 'B'\n",
    "unknown T function": HEAD
    + "    A[0] = T.exq(A[1])  # error@12: unknown name T.exq; did you mean T.exp?\n",
    "unknown dtype string": HEAD
    + "    B = T.alloc_buffer((4,), \"flaot32\")  # error@30: unknown data type 'flaot32'; did you mean 'float32'?\n",  # noqa: E501
    "unknown dtype constructor": HEAD
    + "    A[0] = T.flaot32(1)  # error@12: did you mean T.float32?\n",
    "intrinsic arity": HEAD
    + "    A[0] = T.exp(A[1], A[2])  # error@12: T.exp takes 1 argument (2 given)\n",
    "builtin arity": HEAD
    + "    A[0] = T.Select(n > 0, A[1])  # error@12: T.Select is missing its argument 'false_value'\n",  # noqa: E501
    "remap arity": '@T.prim_func(s_tir=True)\ndef main(A: T.Buffer((4, 4), "float32")):\n'
    "    for i, j in T.grid(4, 4):\n"
    '        with T.sblock("b"):\n'
    '            vi, vj = T.axis.remap("SSR", [i, j])  # error@22: T.axis.remap has 3 kinds\n'
    "            A[vi, vj] = 0.0\n",
    "binary type mismatch": HEAD + "    A[0] = A[1] + A.data  # error@12: float32 and handle\n",
    "ambiguous integer division": HEAD
    + "    A[0] = T.Cast(\"float32\", n / 2)  # error@30: use '//'\n",
    "division by zero": HEAD + "    A[n // 0] = 1.0  # error@7: division by zero\n",
    # an int beside an expression becomes a constant in the operator's own span
    "literal too wide on the right": HEAD
    + "    A[0] = A[1] + 99999999999999999999999  # error@12: integer 99999999999999999999999 does not fit in int64\n",  # noqa: E501
    "literal too wide on the left": HEAD
    + "    A[99999999999999999999999 * n] = 1.0  # error@7: integer 99999999999999999999999 does not fit in int64\n",  # noqa: E501
    "integer operator on a float": HEAD
    + "    A[n % 0.0] = 1.0  # error@7: in '%': floormod needs integer operands, not float32\n",
    "unexpected token": HEAD + "    A[0] = A[1] A[2]  # error@17: unexpected name 'A', expected\n",
    "missing colon": HEAD + "    for i in range(4)  # error@22: expected ':'\n        A[i] = 0.0\n",
    "unterminated string": HEAD
    + '    T.evaluate(T.call_extern("int32", "abc))  # error@39: unterminated string\n',
    "bad dedent": HEAD + "    A[0] = 1.0\n  A[1] = 2.0  # error@3: unindent does not match\n",
    "unexpected indent": HEAD
    + "    A[0] = 1.0\n        A[1] = 2.0  # error@9: unexpected indent\n",
    "tab after spaces": HEAD
    + "    for i in range(4):\n        A[i] = 1.0\n\tA[0] = 2.0  # error@2: inconsistent use of tabs and spaces\n",  # noqa: E501
    "spaces after tab": HEAD
    + "\tfor i in range(4):\n\t\tA[i] = 1.0\n        A[0] = 2.0  # error@9: inconsistent use of tabs and spaces\n",  # noqa: E501
    "buffer as a condition": HEAD
    + "    if A:  # error@8: expected a bool condition, got the buffer 'A'\n        A[0] = 1.0\n",
    "bracket never closed": HEAD + "    A[0] = T.exp(A[1]  # error@17: '(' was never closed\n",
    "mismatched bracket": HEAD + "    A[0] = T.exp(A[1]]  # error@22: ']' does not match the '('\n",
    "unexpected character": HEAD + "    A[0] = A[1] $ 2.0  # error@17: unexpected character '$'\n",
    "too many indices": HEAD
    + "    A[0, 1] = 1.0  # error@5: buffer A has 1 dimension but 2 indices given\n",
    "reads outside a block": HEAD
    + "    T.reads(A[0])  # error@5: T.reads must be directly inside a T.sblock\n",
    "init outside a block": HEAD
    + "    with T.init():  # error@10: T.init() must be directly inside a T.sblock\n        A[0] = 0.0\n",  # noqa: E501
    "parameter without type": "@T.prim_func\ndef main(A):  # error@10: parameter 'A' needs a type annotation\n    pass\n",  # noqa: E501
    "misspelled keyword": HEAD
    + "    B = T.alloc_buffer((4,), scoep=\"shared\")  # error@36: did you mean 'scope'?\n",
    "store into a scalar": HEAD
    + "    n[0] = 1  # error@5: cannot store into an expression of type int32\n",
    "loop over a number": HEAD
    + "    for i in 5:  # error@14: a for loop runs over range(...)\n        A[i] = 0.0\n",
    "let type mismatch": HEAD
    + "    x: T.let[T.int32] = A[0]  # error@25: 'x' is int32 but its value is float32\n",
    "negative unsigned": HEAD
    + '    A[0] = T.Cast("float32", T.uint8(-1))  # error@38: cannot make uint8 from negative value -1\n',  # noqa: E501
    "missing decorator": 'def main(A: T.Buffer((4,), "float32")):  # error@5: needs a decorator\n    pass\n',  # noqa: E501
    "class without ir_module": "class Module:  # error@7: needs the decorator @I.ir_module\n    pass\n",  # noqa: E501
    "recursive macro": "@T.macro\ndef f(x):\n    g(x)\n@T.macro\ndef g(x):\n"
    "    f(x)  # error@5: macro 'f' calls itself recursively: f -> g -> f\n" + HEAD + "    f(A)\n",
    "wrong number of loop variables": HEAD
    + "    for i, j in range(4):  # error@9: 2 loop variables for 1 loop\n        pass\n",
    "unknown attribute of a buffer": HEAD
    + "    A[0] = A.dtyp  # error@12: a buffer has no attribute 'dtyp'; did you mean 'dtype'?\n",
    "axis outside a block": HEAD
    + "    v = T.axis.spatial(4, 0)  # error@9: must be directly inside a T.sblock\n",
    "empty file": "# error@1: no function in file\n",
}


@pytest.mark.parametrize("text", list(CASES.values()), ids=list(CASES))
def test_error_is_located_and_worded(text: str) -> None:
    check_marked(text)


def test_tabs_used_consistently_are_fine() -> None:
    from tirc.text import parse

    for body in (
        "\tfor i in range(4):\n\t\tA[i] = 1.0\n\tA[0] = 2.0\n",
        "\tfor i in range(4):\n\t    A[i] = 1.0\n\tA[0] = 2.0\n",
    ):
        parse(HEAD + body)


def test_several_errors_are_all_reported() -> None:
    error = expect_error(HEAD + "    A[0] = B[0]\n    A[1] = C[0]\n    A[2] = T.exq(1)\n")
    messages = [d.message for d in error.diagnostics]
    assert len(messages) == 3
    assert "'B'" in messages[0] and "'C'" in messages[1] and "T.exq" in messages[2]
    assert [d.span.line for d in error.diagnostics if d.span] == [3, 4, 5]


def test_a_failed_definition_is_not_reported_again_where_used() -> None:
    error = expect_error(HEAD + "    x = undefined_name + 1\n    A[0] = x\n    A[1] = x * 2\n")
    assert len(error.diagnostics) == 1


def test_nul_byte_is_a_located_error() -> None:
    error = expect_error(HEAD + "    A[0] = 1.0\x00\n")
    diagnostic = error.diagnostics[0]
    assert "NUL byte" in diagnostic.message
    assert diagnostic.span is not None and (diagnostic.span.line, diagnostic.span.column) == (3, 15)


def test_binary_garbage_is_a_located_error() -> None:
    error = expect_error("\x7fELF\x02\x01\x01\x00\x00\x00garbage")
    assert error.diagnostics[0].span is not None


def test_error_in_a_macro_notes_the_call_site() -> None:
    text = "@T.macro\ndef fill(buf):\n    buf[0] = missing\n" + HEAD + "    fill(A)\n"
    diagnostic = expect_error(text).diagnostics[0]
    assert "undefined name 'missing'" in diagnostic.message
    assert diagnostic.span is not None and (diagnostic.span.line, diagnostic.span.column) == (3, 14)
    assert len(diagnostic.notes) == 1
    note = diagnostic.notes[0]
    assert "macro 'fill'" in note.message
    assert note.span is not None and (note.span.line, note.span.column) == (6, 5)


def test_define_naming_no_parameter() -> None:
    error = expect_error(
        "N = 4\nDTYPE = 'float32'\n" + HEAD + "    A[0] = N\n", defines={"NN": "8"}
    )
    diagnostic = error.diagnostics[0]
    assert diagnostic.span is None
    assert "-D NN" in diagnostic.message
    assert "parameters: DTYPE, N" in diagnostic.message
    assert "did you mean 'N'?" in diagnostic.message


def test_deeply_nested_expression_is_a_located_error() -> None:
    depth = 30_000
    error = expect_error(HEAD + "    x = " + "[" * depth + "]" * depth + "\n")
    diagnostic = error.diagnostics[0]
    assert "nested too deeply" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 3


def test_deeply_nested_parentheses_are_fine() -> None:
    from tests.text.parse_helpers import parse

    depth = 20_000
    parse(HEAD + "    A[0] = " + "(" * depth + "A[1]" + ")" * depth + "\n")


def test_megabyte_line_of_garbage_fails_fast() -> None:
    started = time.perf_counter()
    error = expect_error(HEAD + "    A[0] = " + "$" * 1_000_000 + "\n")
    assert time.perf_counter() - started < 5
    assert error.diagnostics[0].span is not None and error.diagnostics[0].span.line == 3


@pytest.mark.slow  # as test_long_lines_are_linear, at 50,000 terms; the error cases stay fast
def test_megabyte_line_of_valid_code_parses() -> None:
    from tests.text.parse_helpers import parse

    started = time.perf_counter()
    parse(HEAD + "    A[0] = A[1]" + " + A[1]" * 50_000 + "\n")
    assert time.perf_counter() - started < 30


def test_megabyte_unclosed_bracket() -> None:
    # like Python, the innermost bracket still open is the one reported
    count = 100_000
    check_marked(HEAD + "    A[0] = " + "(" * count + f"  # error@{11 + count}: was never closed\n")
