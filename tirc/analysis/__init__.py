"""Pure queries over the IR: integer arithmetic (`arith`), access regions, well-formedness
(`well_formed`). Nothing here rewrites a program; everything answers a question about one."""
