"""A ``google_cloud_platform`` connection's service account key as GCS connector settings and delta-rs
options.

The fields follow the google provider's connection: the extras ``key_path`` (a JSON key file, at the same
path wherever the job runs) or ``keyfile_dict`` (the key's JSON, as text or as an object), ``project`` (or
``project_id``; default: the key's project) and ``scope``, also with the ``extra__google_cloud_platform__``
prefix of older connections. Scopes are not carried: the GCS connector and delta-rs ask for the storage
scope they need. A connection without a key passes only its project: the credentials then come from where
the job runs (Application Default Credentials, the metadata server). A key in Secret Manager, a credential
configuration file and an impersonation chain are refused rather than ignored.

GCS connector 3.x reads a key only from a file (``fs.gs.auth.type=SERVICE_ACCOUNT_JSON_KEYFILE`` and
``fs.gs.auth.service.account.json.keyfile``); 2.x also reads one from the settings
(``fs.gs.auth.service.account.email``, ``.private.key.id`` and ``.private.key``), which is how an inline
key is passed unless the job writes it to a file (see :meth:`GcpCredentials.hadoop_conf`).

These mappings are tested on configuration only: no GCS service runs in the tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PREFIX = "extra__google_cloud_platform__"
KEYFILE_AUTH = "SERVICE_ACCOUNT_JSON_KEYFILE"
#: The fields of a service account key that the GCS connector and delta-rs sign requests with.
KEY_FIELDS = ("client_email", "private_key_id", "private_key")
#: Extras of credentials this mapping cannot carry.
UNSUPPORTED_EXTRAS = ("key_secret_name", "credential_config_file", "impersonation_chain")


@dataclass(frozen=True)
class GcpCredentials:
    """What a ``google_cloud_platform`` connection tells Spark (the GCS connector) and delta-rs: a key
    file's path or a key's JSON, or neither.

    :param key_path: the path of a JSON key file.
    :param keyfile_json: a service account key's JSON text.
    :param project_id: the project (the GCS connector's, for listing and creating buckets).
    """

    key_path: str | None = None
    keyfile_json: str | None = field(default=None, repr=False)
    project_id: str | None = None

    @classmethod
    def from_fields(cls, *, extra: Mapping[str, Any]) -> GcpCredentials:
        """Read a connection's extras.

        :param extra: the extras, parsed.
        :raises ValueError: naming the field, for a malformed key or an unsupported credential source.
        """

        def get(name: str) -> Any:
            return (extra[name] if name in extra else extra.get(f"{PREFIX}{name}")) or None

        for name in UNSUPPORTED_EXTRAS:
            if get(name):
                raise ValueError(
                    f"extra {name} is not supported: give the service account key as extra key_path or "
                    "keyfile_dict"
                )
        keyfile = get("keyfile_dict")
        key = _parse_key(keyfile) if keyfile else None
        project = get("project") or get("project_id") or (key or {}).get("project_id")
        credentials = cls(
            key_path=str(get("key_path")) if get("key_path") else None,
            keyfile_json=json.dumps(key) if key is not None else None,
            project_id=str(project) if project else None,
        )
        credentials.check()
        return credentials

    def check(self) -> None:
        """Refuse two keys, a key file that is not JSON, and a key that is not a service account's.

        :raises ValueError: naming the field (never quoting the key).
        """
        if self.key_path and self.keyfile_json:
            raise ValueError("the connection sets both extra key_path and extra keyfile_dict: keep one")
        if self.key_path and not self.key_path.endswith(".json"):
            raise ValueError(
                f"extra key_path={self.key_path!r} is not a JSON key file (.json); P12 keys are not supported"
            )
        if self.keyfile_json:
            self._key()

    def _key(self) -> dict[str, Any]:
        """The service account key, checked."""
        key = _parse_key(self.keyfile_json or "")
        missing = [name for name in KEY_FIELDS if not isinstance(key.get(name), str) or not key[name]]
        if missing:
            raise ValueError(
                f"extra keyfile_dict lacks {', '.join(missing)}: it must be a service account key "
                '("type": "service_account")'
            )
        if "PRIVATE KEY-----" not in key["private_key"]:
            raise ValueError("extra keyfile_dict's private_key is not a PEM private key")
        return key

    def hadoop_conf(self, keyfile_path: str | None = None) -> dict[str, str]:
        """GCS connector settings, as runtime session settings (``fs.gs.*``): the Spark job sets them on the
        operation's session, so they travel in the job spec and never on the spark-submit command line.

        :param keyfile_path: where the job wrote :attr:`keyfile_json` (for an inline key only): the settings
            then name that file, which every GCS connector reads. Without it the key's fields are set, which
            only connector 2.x reads; 3.x, told to use a key file and given none, fails rather than use the
            machine's own identity.
        """
        conf: dict[str, str] = {}
        path = self.key_path or (keyfile_path if self.keyfile_json else None)
        if path:
            conf["fs.gs.auth.type"] = KEYFILE_AUTH
            conf["fs.gs.auth.service.account.json.keyfile"] = path
        elif self.keyfile_json:
            key = self._key()
            conf["fs.gs.auth.type"] = KEYFILE_AUTH
            conf["fs.gs.auth.service.account.enable"] = "true"
            conf["fs.gs.auth.service.account.email"] = key["client_email"]
            conf["fs.gs.auth.service.account.private.key.id"] = key["private_key_id"]
            conf["fs.gs.auth.service.account.private.key"] = key["private_key"]
        if self.project_id:
            conf["fs.gs.project.id"] = self.project_id
        return conf

    def delta_rs_options(self) -> dict[str, str]:
        """delta-rs ``storage_options`` for the same store."""
        if self.key_path:
            return {"GOOGLE_SERVICE_ACCOUNT": self.key_path}
        if self.keyfile_json:
            return {"GOOGLE_SERVICE_ACCOUNT_KEY": self.keyfile_json}
        return {}

    def secrets(self) -> list[str]:
        """The values no log may show: the key's JSON and its private key, as is and as escaped in JSON."""
        if not self.keyfile_json:
            return []
        try:
            private_key = str(_parse_key(self.keyfile_json).get("private_key") or "")
        except ValueError:  # not JSON: the text itself is all there is to hide
            private_key = ""
        values = [self.keyfile_json, private_key, json.dumps(private_key)[1:-1]]
        return [value for value in dict.fromkeys(values) if value]


def _parse_key(keyfile: Any) -> dict[str, Any]:
    """A key given as JSON text or as an object, with the escaped newlines of its private key (``\\n``
    typed into a form) made real ones.

    :param keyfile: extra ``keyfile_dict`` (a secret: never quoted in errors).
    """
    if isinstance(keyfile, Mapping):
        key = dict(keyfile)
    else:
        try:
            key = json.loads(str(keyfile))
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"extra keyfile_dict is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        if not isinstance(key, dict):
            raise ValueError("extra keyfile_dict is not a JSON object: give the service account key's JSON")
    if isinstance(key.get("private_key"), str):
        key["private_key"] = key["private_key"].replace("\\n", "\n")
    return key
