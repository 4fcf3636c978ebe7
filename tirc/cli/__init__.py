"""The command line: argument plumbing only, over tirc.driver."""
