"""`python -m rmqstore.cli ...` runs the `rmqstore` command."""

import sys

from rmqstore.cli import main

sys.exit(main())
