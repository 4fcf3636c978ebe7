"""Memory: storages and pointers (storage), and its per-lane layout in the lockstep model
(lanes)."""
