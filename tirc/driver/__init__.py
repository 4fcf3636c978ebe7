"""The one place the layers meet: reads inputs, runs parser, verifier and passes, writes outputs.

The command line calls into here; everything below it stays free of files and exit codes.
"""
