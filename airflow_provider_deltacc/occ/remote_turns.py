"""Turns asked of the Airflow worker, for a commit loop that runs in a Spark driver.

A ``spark_submit`` driver cannot reach the lease store, but the worker that submitted it holds the writer's
lease and serves its turns (:mod:`airflow_provider_deltacc.windows.turn_service`). :class:`RemoteTurns` is
the driver's side: plain HTTP from the standard library, so the bundle needs nothing more. A service that
does not answer means no turns, as for a store that cannot be asked: the loop backs off by its policy.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

log = logging.getLogger(__name__)

#: Seconds a request may take beyond the longest wait for a turn (the service answers when the wait ends).
REQUEST_MARGIN_S = 30.0
#: The header that carries the token.
TOKEN_HEADER = "X-Deltacc-Turn-Token"


class RemoteTurns:
    """The writer's turns, asked of its turn service (see ``occ.commit_loop.Turns``).

    :param url: the service's ``http://host:port`` address.
    :param token: the secret the service expects.
    :param timeout_s: the longest wait for one turn, as the service bounds it.
    """

    def __init__(self, url: str, token: str, timeout_s: float) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.timeout_s = timeout_s
        self._warned = False

    def first(self) -> float | None:
        return self._ask("first", {})

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        return self._ask("retry", {"conflict_kind": conflict_kind, "attempt": attempt})

    def _ask(self, what: str, body: dict[str, Any]) -> float | None:
        request = urllib.request.Request(
            f"{self.url}/{what}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", TOKEN_HEADER: self._token},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s + REQUEST_MARGIN_S) as response:
                waited = json.loads(response.read().decode()).get("waited")
        except (OSError, urllib.error.URLError, ValueError) as exc:
            if not self._warned:
                log.warning(
                    "the writer's turn service %s does not answer (%s: %s); retrying by the backoff policy",
                    self.url,
                    type(exc).__name__,
                    exc,
                )
                self._warned = True
            return None
        return float(waited) if isinstance(waited, int | float) and not isinstance(waited, bool) else None
