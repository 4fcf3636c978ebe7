"""The printer's parts, one concern per module: literals, names, precedence and folding under
expr; buffers, loops and blocks under stmt; functions in func. The entry is text.printer."""
