"""Put on a spark-submit driver's PYTHONPATH by :mod:`tests.support.submit_hold`: when the driver runs the
bundled job, hold the job's first attempt at the test's gate. Any other process is untouched."""

from __future__ import annotations

import os
import sys

if sys.argv and sys.argv[0].endswith(os.path.join("spark_job", "__main__.py")):
    from tests.support.submit_hold import install_hold

    install_hold()
