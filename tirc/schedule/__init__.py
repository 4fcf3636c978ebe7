"""Scheduling: the state under rewriting, plans as data, one primitive per module."""
