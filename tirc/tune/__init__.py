"""`tirc tune`: find a plan for a kernel by searching a design space made by rules.

rules/ make the space (space.py), search.py explores it guided by a cost model
(cost_model.py, features.py), measure.py builds and times candidates in worker processes,
database.py keeps every measurement, tune.py runs the loop. docs/tune.md is the guide.
"""
