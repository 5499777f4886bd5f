"""Settings every suite shares.

Spark's Python workers run `PYSPARK_PYTHON` (default: `python3` on PATH), not this interpreter;
point them at the interpreter that has rmqstore installed, so a plain `python -m pytest` works in a
virtualenv too.
"""

import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("TZ", "UTC")
