"""The thread model: a PrimFunc compiled to Python source, each GPU thread a coroutine
scheduled by `scheduler` (barriers, warp collectives, data-race checks)."""
