"""`python -m rmqstore ...` runs the `rmqstore` command, like `python -m rmqstore.cli`."""

import sys

from rmqstore.cli import main

sys.exit(main())
