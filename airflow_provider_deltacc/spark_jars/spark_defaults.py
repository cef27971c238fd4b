"""The ``spark-defaults.conf`` spark-submit reads on this machine: ``$SPARK_CONF_DIR``, else
``$SPARK_HOME/conf``, else the ``conf`` folder of pip's pyspark.

spark-submit (and a local session, which pyspark starts through it) applies these settings to every driver it
starts, under the ``--conf`` settings; the operators read them to judge the table's storage as the driver will
see it (a Delta log store configured there counts). A Spark Connect server's defaults are on its own machine
and are not read here.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

CONF_DIR_ENV = "SPARK_CONF_DIR"
DEFAULTS_FILE = "spark-defaults.conf"
# A Java properties line as Spark reads the file: the key ends at the first '=', ':' or whitespace.
_LINE_RE = re.compile(r"^(?P<key>[^\s=:]+)\s*(?:[=:]\s*|\s+)(?P<value>.*)$")


def visible_spark_conf(execution_mode: str, spark_conf: dict[str, str] | None) -> dict[str, str]:
    """The Spark settings the job's driver will have that this worker can see: :func:`spark_defaults` under
    ``spark_conf`` for ``spark_submit`` and ``in_process``; only ``spark_conf`` for ``spark_connect`` (the
    server's defaults are on its machine).

    :param execution_mode: the task's execution mode.
    :param spark_conf: the task's ``spark_conf``.
    """
    defaults = spark_defaults() if execution_mode != "spark_connect" else {}
    return {**defaults, **(spark_conf or {})}


def pip_spark_home() -> str | None:
    """The Spark home of a pip-installed pyspark (the package folder, with ``bin/spark-submit``), found
    without importing pyspark; None when pyspark is not installed that way."""
    spec = importlib.util.find_spec("pyspark")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "bin" / "spark-submit").exists():
            return str(location)
    return None


def spark_defaults_file() -> Path | None:
    """The ``spark-defaults.conf`` spark-submit would read here, or None when there is none."""
    if os.environ.get(CONF_DIR_ENV):
        candidates = [Path(os.environ[CONF_DIR_ENV])]
    else:
        home = os.environ.get("SPARK_HOME") or pip_spark_home()
        candidates = [Path(home) / "conf"] if home else []
    for directory in candidates:
        if (directory / DEFAULTS_FILE).is_file():
            return directory / DEFAULTS_FILE
    return None


def spark_defaults() -> dict[str, str]:
    """The settings of :func:`spark_defaults_file` (empty when there is none or it cannot be read)."""
    path = spark_defaults_file()
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    return parse_spark_defaults(text)


def parse_spark_defaults(text: str) -> dict[str, str]:
    """The settings of a ``spark-defaults.conf`` text (``key value``, ``key=value``; ``#`` comments).

    :param text: the file's text.
    """
    settings: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        match = _LINE_RE.match(line)
        if match:
            settings[match["key"]] = match["value"].strip()
    return settings
