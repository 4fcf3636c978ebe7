"""Memory: storages and pointers (storage), and the lockstep model's rows of bytes per lane
or per block (lanes)."""
