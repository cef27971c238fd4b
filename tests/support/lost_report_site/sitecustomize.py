"""Put on a spark-submit driver's PYTHONPATH by :mod:`tests.support.lost_report`: when the driver runs the
bundled job, lose its report (and hold its first attempt, when a test's gate is set). Any other process is
untouched."""

from __future__ import annotations

import os
import sys

if sys.argv and sys.argv[0].endswith(os.path.join("spark_job", "__main__.py")):
    from tests.support.lost_report import install_lost_report
    from tests.support.submit_hold import install_hold

    install_hold()
    install_lost_report()
