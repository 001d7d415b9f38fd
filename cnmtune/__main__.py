"""`python -m cnmtune` runs the cnmtune command line."""

from cnmtune.plugin.cli import main

main()
