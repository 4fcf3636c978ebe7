"""Running compiled code in this process: the ORC JIT for the CPU backend."""
