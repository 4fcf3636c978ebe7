"""Regenerate the expected halves of the golden pairs of the block-fusing primitives
(fuse_reduction_epilogue) with Apache TVM 0.27 (the oracle).

Run under a Python that has TVM: `/work/tvm-venv/bin/python
tests/schedule/golden/oracle_fusion.py`. For each `<name>.before.tir` of those folders
with a `# plan:` header (and `# decisions:` for sampling steps) and no `# error:` header,
writes `<name>.after.tir`: TVM's result. Cases tirc refuses but TVM accepts are listed
(tirc is stricter on purpose there). Kept free of tirc imports.
"""

import json
import pathlib
import re

import tvm
from tvm import s_tir
from tvm.s_tir.schedule import Trace

HERE = pathlib.Path(__file__).resolve().parent
FOLDERS = ("fuse_reduction_epilogue", "cache_index", "read_at", "write_at")


def header(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def _valid(script: str) -> str:
    """TVM's cache_index gives every index buffer strides (1,), which for a buffer of more
    dimensions does not parse back (in TVM either); such buffers are left compact."""
    lines = []
    for line in script.splitlines():
        match = re.search(r"sblock_alloc_buffer\(\(([^)]*)\)", line)
        if match and "," in match.group(1).strip(", "):
            line = line.replace(", strides=(1,)", "")
        lines.append(line)
    return "\n".join(lines) + ("\n" if script.endswith("\n") else "")


def main() -> None:
    for folder in FOLDERS:
        for before in sorted((HERE / folder).glob("*.before.tir")):
            text = before.read_text()
            plan = json.loads(header(text, "plan") or "[]")
            decisions = json.loads(header(text, "decisions") or "[]")
            mod = tvm.script.from_source(text)
            if not isinstance(mod, tvm.IRModule):
                mod = tvm.IRModule({"main": mod})
            sch = s_tir.Schedule(mod)
            try:
                Trace.apply_json_to_schedule([plan, decisions], sch)
                accepted = True
            except Exception:  # noqa: BLE001 - any refusal counts
                accepted = False
            refused_by_tirc = header(text, "error") is not None
            if refused_by_tirc:
                if accepted:
                    print(f"{folder}/{before.name}: TVM accepts what tirc refuses")
                continue
            if not accepted:
                print(f"{folder}/{before.name}: TVM refuses the plan; no after file written")
                continue
            after = before.with_name(before.name.replace(".before.", ".after."))
            note = f"# {before.name} after its plan, as Apache TVM 0.27 prints it\n"
            after.write_text(note + _valid(sch.mod.script()))


if __name__ == "__main__":
    main()
