"""The lockstep model: the threads of a GPU launch as numpy lanes, statements as closures
over all lanes at once (see kernel)."""
