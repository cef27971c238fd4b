"""In the submitter: the report a driver left on storage (see
:mod:`airflow_provider_deltacc.contract.report_file`), read back and removed; local paths with Python, any
other URI with delta-rs' object store. Never imports pyspark."""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc.contract.report_file import local_dir, read_report_text, report_name


def read_report(report_dir: str, run_token: str) -> tuple[int, dict[str, Any]] | None:
    """The exit code and report the driver left, or None when there is none.

    :param report_dir: the spec's ``outcome.report_dir``.
    :param run_token: the spec's ``outcome.run_token``.
    :raises Exception: whatever the storage raises other than "not found".
    """
    name = report_name(run_token)
    local = local_dir(report_dir)
    if local is not None:
        try:
            text = (local / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
    else:
        from deltalake.fs import DeltaStorageHandler

        handler = DeltaStorageHandler(report_dir.rstrip("/"))
        if handler.get_file_info([name])[0].type.name == "NotFound":
            return None
        with handler.open_input_file(name) as stream:
            text = stream.read().decode("utf-8")
    return read_report_text(text, f"{report_dir}/{name}")


def remove_report(report_dir: str, run_token: str) -> None:
    """Delete the report once read (a missing one is fine).

    :param report_dir: the spec's ``outcome.report_dir``.
    :param run_token: the spec's ``outcome.run_token``.
    """
    name = report_name(run_token)
    local = local_dir(report_dir)
    if local is not None:
        (local / name).unlink(missing_ok=True)
        return
    from deltalake.fs import DeltaStorageHandler

    DeltaStorageHandler(report_dir.rstrip("/")).delete_file(name)
