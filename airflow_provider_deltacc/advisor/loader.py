"""Load DAGs from DAG files or folders with Airflow's DagBag, quietly; import errors name the file."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from airflow_provider_deltacc.contract.exceptions import AdvisorInputError


@contextlib.contextmanager
def _quiet() -> Any:
    sink = io.StringIO()
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            yield
    finally:
        logging.disable(previous)


def load_dags(paths: Iterable[str | Path]) -> list[Any]:
    """Every DAG defined in ``paths`` (DAG files or folders of them).

    :param paths: files or folders.
    :raises AdvisorInputError: for a missing path, or DAG files that fail to import (naming each file and
        its error's last line), or paths that hold no DAG.
    """
    from airflow.dag_processing.dagbag import DagBag

    given = [Path(raw) for raw in paths]
    dags: dict[str, Any] = {}
    for path in given:
        if not path.exists():
            raise AdvisorInputError(
                f"{path}: no such file or folder; give a DAG file or a folder of DAG files"
            )
        with _quiet():
            bag = DagBag(dag_folder=str(path), safe_mode=path.is_dir(), load_op_links=False)
        if bag.import_errors:
            lines = [
                f"{file}: {(error.strip().splitlines() or ['?'])[-1]}"
                for file, error in bag.import_errors.items()
            ]
            raise AdvisorInputError(
                "DAG import errors (fix them, then run the advisor again):\n  " + "\n  ".join(lines)
            )
        dags.update(bag.dags)
    if not dags:
        raise AdvisorInputError(f"no DAG found in {', '.join(str(p) for p in given)}")
    return [dags[dag_id] for dag_id in sorted(dags)]
