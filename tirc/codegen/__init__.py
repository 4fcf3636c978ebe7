"""Backends: turn lowered tir into code other programs link or load. Emit only: no files,
no processes; the driver decides where the bytes go."""
