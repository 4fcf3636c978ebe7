"""The lockstep model: the threads of a GPU launch as numpy lanes, compiled to Python by the
thread model's compiler with lane rules where the text differs (see kernel)."""
