"""Regenerate golden/simplify/spellings.json: index expressions as schedule primitives build
them and TVM 0.27's simplified spelling of each (`Analyzer.simplify`), the forms block
bindings, regions and predicates print in (term order, joined digits, reduced moduli).

Run under a Python that has TVM: `/work/tvm-venv/bin/python
tests/schedule/golden/oracle_simplify.py`. Kept free of tirc imports: each case is Python
text over `i`, `j`, `k` (int32), `fd`/`fm` (floor division and modulo) and integer constants,
which the test evaluates over tirc's builders.
"""

import json
import pathlib

import tvm
from tvm.sym.analyzer import Analyzer

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "simplify" / "spellings.json"

CASES = [
    "9 - (i * 4 + j)",
    "0 - (i * 4 + j) - 3",
    "0 - i * 2",
    "0 - i",
    "k - i * 4 - j * 2",
    "5 - i - j * 8 - k * 2",
    "j + fd(k, 8) + i * 16",
    "fd(k, 8) + j",
    "fm(k, 8) + j",
    "fd(k, 4) + fd(j, 8)",
    "fm(k, 8) + fm(j, 16)",
    "fm(fd(k, 4), 8) + j",
    "j + fd(k, 8) - i",
    "i - fd(k, 8) - j",
    "fd(i * 128 + j * 8 + k, 8)",
    "fd(i * 16 + j, 3136) * 3136 + fd(fm(i * 16 + j, 3136), 56) * 56 + fm(i * 16 + j, 56)",
    "fd(k, 4) * 4 + fm(k, 4)",
    "fd(k, 8) * 8 + fd(fm(k, 8), 2) * 2 + j",
    "fd(k, 4) * 8 + fm(k, 4) * 2",
    "fd(k, 8) * 8 + fm(k, 4)",
    "fd(k, 6) * 6 + fm(k, 6)",
    "fm(i * 4, 3)",
    "fm(i * 5, 3)",
    "fm(i * 4 + j * 5, 3)",
    "fm(i * 4 + 7, 3)",
    "fd(i - 383, 256)",
    "fd(i + j + 300, 256)",
    "fd(i + j + 256, 256)",
    "fd(i * 256 + j - 3, 256)",
    "fm(i + j - 383, 256)",
    "fd(i * 4 + 9, 8)",
    "fd(i * 4 - 7, 8)",
    "fd(i * 4 + 5, 8)",
    "fm(i * 4 + 9, 8)",
    "fd(i + 13, 4) - fd(i + 1, 4)",
    "fd(i + 14, 4) - fd(i + 1, 4)",
    "fd(i + 13, 4) - fd(i, 4)",
    "fd(i, 4) - fd(i + 3, 4)",
    "fd(i + 13, 4) * 2 - fd(i + 1, 4) * 2",
    "fd(i + 13, 4) + j - fd(i + 1, 4)",
]


def main() -> None:
    analyzer = Analyzer()
    scope = {
        "i": tvm.tirx.Var("i", "int32"),
        "j": tvm.tirx.Var("j", "int32"),
        "k": tvm.tirx.Var("k", "int32"),
        "fd": tvm.tirx.floordiv,
        "fm": tvm.tirx.floormod,
    }
    result = []
    for text in CASES:
        expr = eval(text, scope)  # noqa: S307 - our own case list
        result.append({"expr": text, "tvm": str(analyzer.simplify(expr))})
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("[\n" + ",\n".join(json.dumps(item) for item in result) + "\n]\n")
    print(OUT.relative_to(HERE))


if __name__ == "__main__":
    main()
