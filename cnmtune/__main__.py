"""`python -m cnmtune` runs the cnmtune command line."""

from cnmtune.plugin.cli.main import main

main()
