"""The primitive registry: names from module names, modules imported when a plan uses them."""

from __future__ import annotations

import subprocess
import sys

from tirc.schedule import primitives


def test_every_primitive_lives_where_its_name_says() -> None:
    found = primitives.load_all()
    assert sorted(found) == primitives.all_ops()
    for op, entry in found.items():
        assert entry.signature.op == op
        module = entry.apply.__module__.rsplit(".", 1)[1]
        assert op in primitives.SHARED_MODULES.get(module, (module,)), (op, module)


def test_every_module_registers_what_the_table_says() -> None:
    primitives.load_all()
    registered_by: dict[str, set[str]] = {}
    for entry in primitives._BY_OP.values():
        registered_by.setdefault(entry.apply.__module__.rsplit(".", 1)[1], set()).add(
            entry.signature.op
        )
    for module, ops in registered_by.items():
        assert ops == set(primitives.SHARED_MODULES.get(module, (module,))), module


def test_tvm_names_fold_to_the_plan_names() -> None:
    for op, entry in primitives.load_all().items():
        tvm = entry.signature.tvm
        assert tvm.replace("_", "").lower() == op.replace("_", "").lower(), (op, tvm)
        assert primitives.by_tvm_name(tvm) is entry


def test_tvm_names_are_exact() -> None:
    assert primitives.by_tvm_name("ComputeAt") is primitives.by_op("compute_at")
    assert primitives.by_tvm_name("ReIndex") is primitives.by_op("reindex")
    assert primitives.by_tvm_name("computeat") is None
    assert primitives.by_tvm_name("Reindex") is None
    assert primitives.by_tvm_name("NoSuchThing") is None
    assert primitives.by_op("ComputeAt") is None
    assert primitives.by_op("no_such_thing") is None


def test_a_plan_imports_only_the_primitives_it_uses() -> None:
    code = (
        "import sys\n"
        "from tirc.schedule import primitives\n"
        "assert 'compute_at' in primitives.all_ops()\n"
        "before = sorted(m for m in sys.modules if m.startswith('tirc.schedule.primitives.'))\n"
        "print(before)\n"
        "print(primitives.by_tvm_name('Split').signature.op)\n"
        "print(sorted(m for m in sys.modules if m.startswith('tirc.schedule.primitives.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before, op, after = done.stdout.splitlines()
    assert before == "[]"
    assert op == "split"
    assert "tirc.schedule.primitives.compute_at" not in after
