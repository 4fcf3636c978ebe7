"""Run under a Python that has Apache TVM 0.27: parse pairs of files and compare them.

Reads JSON `[[original, printed], ...]` on stdin; writes JSON `{printed: verdict}` where the
verdict is "ok" or why TVM disagrees. Kept free of tirc imports: it runs in TVM's venv.
"""

import json
import sys

import tvm


def load(path: str):  # noqa: ANN201 - TVM objects
    with open(path) as handle:
        return tvm.script.from_source(handle.read())


def main() -> None:
    verdicts = {}
    for original, printed in json.load(sys.stdin):
        try:
            want = load(original)
        except Exception as error:  # noqa: BLE001 - report any TVM failure as data
            verdicts[printed] = f"TVM cannot parse the original: {str(error)[:200]}"
            continue
        try:
            got = load(printed)
        except Exception as error:  # noqa: BLE001
            verdicts[printed] = (
                f"TVM cannot parse tirc's print: {str(error).splitlines()[-1][:300]}"
            )
            continue
        try:
            tvm.ir.assert_structural_equal(want, got, map_free_vars=True)
            verdicts[printed] = "ok"
        except Exception as error:  # noqa: BLE001
            verdicts[printed] = f"not structurally equal: {str(error)[:300]}"
    json.dump(verdicts, sys.stdout)


if __name__ == "__main__":
    main()
