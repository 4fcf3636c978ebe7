"""The fuzzer: mutated corpus programs and generated ones, driven through parse → verify →
print → parse (and sometimes lowering); any exception other than a located DiagnosticError
is a crash. `python -m tests.fuzz --count N` runs a campaign; test_fuzz.py runs one in CI.
"""
