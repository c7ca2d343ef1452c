"""Allow ``python -m kshare_cli`` where the console script is not on PATH."""

from kshare_cli.entry import main

main()
