"""pyfootprint scripts for W1-W6; each module has ``main(quick=False)``."""
