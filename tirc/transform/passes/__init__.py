"""The passes, one per module, each named as on the command line (`lower_init_block.py` is
`lower-init-block`); tirc.transform.registry finds them here."""
