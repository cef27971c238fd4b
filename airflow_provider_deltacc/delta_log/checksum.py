"""A version's checksum file (``_delta_log/<version>.crc``): the snapshot's protocol, metadata and txn
identities, as the writer of that version computed them.

delta-spark writes one after each commit (best effort); Delta Kernel reads the protocol and metadata from it
instead of replaying the checkpoint. It is a small JSON file whatever the table's size, where a checkpoint
holds a row for every file. delta-rs writes none. A file that is not there, does not parse or lacks what is
asked for (``setTransactions``, which a writer leaves out when it has too many txn identities to list) is
not used: the checkpoint is read as before.

Airflow-free and pyspark-free.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from airflow_provider_deltacc.delta_log.log_storage import LogFiles

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checksum:
    """What the reader takes from a checksum file.

    :param protocol: the ``protocol`` action.
    :param metadata: the ``metaData`` action.
    :param txns: the version recorded for each txn app id, or None when the file does not list them.
    """

    protocol: dict[str, Any]
    metadata: dict[str, Any]
    txns: dict[str, int] | None


def checksum_name(version: int) -> str:
    """The file name of version ``version``'s checksum in ``_delta_log``."""
    return f"{version:020d}.crc"


def read_checksum(files: LogFiles, version: int) -> Checksum | None:
    """Version ``version``'s checksum file, or None when it is not there or not one this reads.

    :param files: the log folder.
    :param version: the table version.
    """
    try:
        content = json.loads(files.read(checksum_name(version)))
        protocol, metadata = content["protocol"], content["metadata"]
        if not isinstance(protocol, dict) or not isinstance(metadata, dict):
            raise TypeError("protocol and metadata must be objects")
        listed = content.get("setTransactions")
        txns = None if listed is None else {str(t["appId"]): int(t["version"]) for t in listed}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.debug("ignoring the checksum of version %d in %s: %r", version, files.location, exc)
        return None
    return Checksum(protocol, metadata, txns)
