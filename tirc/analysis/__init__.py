"""Pure queries over the IR: integer arithmetic (`arith`), access regions, well-formedness
(`well_formed`). Nothing here rewrites a program; everything answers a question about one.

`arith` and `regions` import nothing but `tirc.ir`, so that the text layer may use them: the
parser simplifies extents and completes block regions at parse time, as TVMScript does.
"""
