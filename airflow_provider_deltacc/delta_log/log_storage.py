"""Where a table's ``_delta_log`` lives, for the provider's own log reader: list it, read a file of it.

Local disk (a path or ``file:`` URI), S3 (``s3://``, ``s3a://``) and Azure (``abfs[s]://``, ``az://``)
through pyarrow's file systems, from the same storage options delta-rs gets (the task's connections, see
:mod:`airflow_provider_deltacc.object_storage.connections`), under the ``AWS_*`` environment delta-rs reads
too. Anything else, and any option this does not know the meaning of, is :class:`UnsupportedLog`: the
caller reads the log with delta-rs instead, never with a guess at what an option meant. GCS falls back too:
pyarrow's file system takes no service-account key file, which is how the task's connection names one.

pyarrow is imported when a log on object storage is opened, never at module import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from airflow_provider_deltacc.contract.exceptions import UnsupportedLog
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import Storage, storage

LOG_DIR = "_delta_log"
#: delta-rs options that change only how delta-rs writes (its commit locking), never what a read sees.
_WRITE_ONLY_OPTIONS = frozenset(
    {
        "AWS_S3_LOCKING_PROVIDER",
        "AWS_S3_ALLOW_UNSAFE_RENAME",
        "CONDITIONAL_PUT",
        "AWS_CONDITIONAL_PUT",
        "DELTA_DYNAMO_TABLE_NAME",
        "AWS_COPY_IF_NOT_EXISTS",
    }
)
#: delta-rs's client settings: how often and how long a request may be retried and may take. pyarrow's S3
#: client takes the same bounds (``RETRY_TIMEOUT``, the total time of the retries, has no equivalent there:
#: the retries and the timeouts bound it).
_CLIENT_OPTIONS = frozenset({"MAX_RETRIES", "RETRY_TIMEOUT", "CONNECT_TIMEOUT", "TIMEOUT"})
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_S3_OPTIONS = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT",
        "AWS_ALLOW_HTTP",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
    }
)
_AZURE_OPTIONS = frozenset({"AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY"})
_AZURE_SUFFIX = ".core.windows.net"


class LogFiles(Protocol):
    """A table's ``_delta_log`` folder: its file names, and a file's bytes."""

    @property
    def location(self) -> str:
        """The folder's path on its file system."""
        ...

    def names(self) -> list[str]:
        """The names of the folder's files (not of its sub-folders' files); empty when there is no folder."""
        ...

    def exists(self, name: str) -> bool:
        """Whether the folder holds a file of that name, asked without reading it."""
        ...

    def read(self, name: str) -> bytes:
        """A file's bytes; ``name`` may name a file of a sub-folder (``_sidecars/x.parquet``).

        :raises FileNotFoundError: when it is not there.
        """
        ...

    def open_input(self, name: str) -> Any:
        """A random-access file pyarrow's parquet reader can read.

        :raises FileNotFoundError: when it is not there.
        """
        ...


@dataclass(frozen=True)
class LocalLogFiles:
    """The ``_delta_log`` folder of a table on this machine's disk.

    :param location: the folder's path.
    """

    location: str

    def names(self) -> list[str]:
        try:
            return os.listdir(self.location)
        except FileNotFoundError:
            return []

    def exists(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self.location, name))

    def read(self, name: str) -> bytes:
        with open(os.path.join(self.location, name), "rb") as file:
            return file.read()

    def read_head(self, name: str, size: int) -> bytes:
        """A file's first ``size`` bytes (all of it when it is shorter).

        :raises FileNotFoundError: when it is not there.
        """
        with open(os.path.join(self.location, name), "rb") as file:
            return file.read(size)

    def open_input(self, name: str) -> Any:
        import pyarrow as pa

        # A native file: parquet reads through a Python file object cost ten times more.
        return pa.OSFile(os.path.join(self.location, name), "rb")


@dataclass(frozen=True)
class ArrowLogFiles:
    """The ``_delta_log`` folder of a table on a pyarrow file system.

    :param filesystem: the file system.
    :param location: the folder's path on it (``bucket/table/_delta_log``).
    """

    filesystem: Any
    location: str

    def names(self) -> list[str]:
        from pyarrow import fs

        found = self.filesystem.get_file_info(fs.FileSelector(self.location, allow_not_found=True))
        return [info.base_name for info in found if info.type == fs.FileType.File]

    def exists(self, name: str) -> bool:
        from pyarrow import fs

        return bool(self.filesystem.get_file_info(f"{self.location}/{name}").type == fs.FileType.File)

    def read(self, name: str) -> bytes:
        with self.filesystem.open_input_stream(f"{self.location}/{name}") as stream:
            return bytes(stream.read())

    def open_input(self, name: str) -> Any:
        return self.filesystem.open_input_file(f"{self.location}/{name}")


def open_log_files(table: Table, storage_options: Mapping[str, str] | None = None) -> LogFiles:
    """The table's ``_delta_log`` folder, on the file system its location names.

    :param table: the table (a path or URI).
    :param storage_options: delta-rs storage options (None: the environment's, as delta-rs reads them).
    :raises UnsupportedLog: for a location or an option this reader does not handle.
    """
    path = table.local_path
    if path is not None:
        return LocalLogFiles(os.path.join(str(path), LOG_DIR))
    parts = urlsplit(table.name)
    options = {key.upper(): str(value) for key, value in (storage_options or {}).items()}
    if storage(table) is Storage.S3:
        return ArrowLogFiles(_s3_filesystem(options), _join(parts.netloc, parts.path))
    if storage(table) is Storage.ABFS:
        container, account = _azure_container(parts.netloc, options)
        return ArrowLogFiles(_azure_filesystem(account, options), _join(container, parts.path))
    raise UnsupportedLog(f"no file system of the provider's log reader for {table.scheme} paths")


def _join(root: str, path: str) -> str:
    inner = path.strip("/")
    return f"{root}/{inner}/{LOG_DIR}" if inner else f"{root}/{LOG_DIR}"


def _unknown(options: Mapping[str, str], known: frozenset[str]) -> list[str]:
    return sorted(set(options) - known - _WRITE_ONLY_OPTIONS - _CLIENT_OPTIONS)


def _s3_filesystem(options: Mapping[str, str]) -> Any:
    """pyarrow's S3 file system with delta-rs's options, over the ``AWS_*`` environment delta-rs reads."""
    unknown = _unknown(options, _S3_OPTIONS)
    if unknown:
        raise UnsupportedLog(f"S3 storage options the log reader does not know: {', '.join(unknown)}")
    merged = {key: os.environ[key] for key in _S3_OPTIONS if os.environ.get(key)} | dict(options)
    from pyarrow import fs

    endpoint = merged.get("AWS_ENDPOINT_URL") or merged.get("AWS_ENDPOINT")
    kwargs: dict[str, Any] = {
        "region": merged.get("AWS_REGION") or merged.get("AWS_DEFAULT_REGION") or "us-east-1",
        "force_virtual_addressing": _true(merged.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST")),
    }
    if merged.get("AWS_ACCESS_KEY_ID") and merged.get("AWS_SECRET_ACCESS_KEY"):
        kwargs.update(access_key=merged["AWS_ACCESS_KEY_ID"], secret_key=merged["AWS_SECRET_ACCESS_KEY"])
        if merged.get("AWS_SESSION_TOKEN"):
            kwargs["session_token"] = merged["AWS_SESSION_TOKEN"]
    if "CONNECT_TIMEOUT" in merged:
        kwargs["connect_timeout"] = _seconds(merged["CONNECT_TIMEOUT"])
    if "TIMEOUT" in merged:
        kwargs["request_timeout"] = _seconds(merged["TIMEOUT"])
    if "MAX_RETRIES" in merged:
        if not merged["MAX_RETRIES"].strip().isdigit():
            raise UnsupportedLog(f"MAX_RETRIES={merged['MAX_RETRIES']!r} is not a number")
        kwargs["retry_strategy"] = fs.AwsStandardS3RetryStrategy(max_attempts=int(merged["MAX_RETRIES"]) + 1)
    if endpoint:
        endpoint_parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        if endpoint_parts.scheme == "http" and not _true(merged.get("AWS_ALLOW_HTTP")):
            raise UnsupportedLog("an http:// S3 endpoint without AWS_ALLOW_HTTP: delta-rs refuses it")
        kwargs.update(endpoint_override=endpoint_parts.netloc, scheme=endpoint_parts.scheme)
    return fs.S3FileSystem(**kwargs)


def _azure_container(netloc: str, options: Mapping[str, str]) -> tuple[str, str]:
    """(container, account) of ``abfss://container@account.dfs.core.windows.net`` or ``az://container``."""
    container, _, host = netloc.partition("@")
    account = host.split(".")[0] if host.endswith(_AZURE_SUFFIX) else ""
    if host and not account:
        raise UnsupportedLog(f"an Azure host the log reader does not know: {host}")
    account = account or options.get("AZURE_STORAGE_ACCOUNT_NAME", "")
    if not account:
        raise UnsupportedLog("no Azure storage account in the location or the options")
    return container, account


def _azure_filesystem(account: str, options: Mapping[str, str]) -> Any:
    unknown = _unknown(options, _AZURE_OPTIONS)
    if unknown:
        raise UnsupportedLog(f"Azure storage options the log reader does not know: {', '.join(unknown)}")
    key = options.get("AZURE_STORAGE_ACCOUNT_KEY")
    if not key:
        raise UnsupportedLog("Azure without an account key: delta-rs resolves the credential")
    from pyarrow import fs

    return fs.AzureFileSystem(account_name=account, account_key=key)


def _seconds(text: str) -> float:
    """A delta-rs duration (``10s``, ``500ms``, ``1m``) in seconds."""
    match = _DURATION_RE.match(text)
    if match is None:
        raise UnsupportedLog(f"a timeout the log reader does not read: {text!r}")
    return float(match.group(1)) * _SECONDS[match.group(2) or "s"]


def _true(value: str | None) -> bool:
    return str(value or "").strip().lower() in ("1", "true", "yes")
