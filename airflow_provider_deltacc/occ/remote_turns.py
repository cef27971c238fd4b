"""Turns asked of the Airflow worker, for a commit loop that runs in a Spark driver.

A ``spark_submit`` driver cannot reach the lease store, but the worker that submitted it holds the writer's
lease and serves its turns (:mod:`airflow_provider_deltacc.turns.service`). :class:`RemoteTurns` is
the driver's side: plain HTTP from the standard library, so the bundle needs nothing more. A service that
does not answer means no turns, as for a store that cannot be asked: the loop backs off by its policy.

Where the worker's lease is what keeps the write safe (``fenced``), the driver also asks, right before each
attempt's write commits, whether that lease still holds: a lapsed lease, or a service that does not answer
then, abandons the attempt with :class:`~airflow_provider_deltacc.contract.exceptions.LeaseLapsedError`.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from airflow_provider_deltacc.contract.exceptions import LeaseLapsedError

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
    :param fenced: the service guards the lease that keeps this write safe (see the module docstring).
    :param table: the table, for the error of a lapsed lease.
    """

    def __init__(
        self, url: str, token: str, timeout_s: float, *, fenced: bool = False, table: str = ""
    ) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.timeout_s = timeout_s
        self.fenced = fenced
        self.table = table
        self._warned = False

    def before_commit(self) -> None:
        """Right before an attempt's write commits: raise :class:`LeaseLapsedError` when the worker's lease
        lapsed or the worker does not answer (only for a ``fenced`` service; else nothing is asked)."""
        if not self.fenced:
            return
        try:
            answer = self._post("check", {}, timeout_s=REQUEST_MARGIN_S)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            raise LeaseLapsedError(
                self.table,
                f"the writer's lease held by its Airflow worker ({self.url})",
                0.0,
                f"the worker's turn service did not answer: {type(exc).__name__}: {exc}",
            ) from exc
        self._raise_if_lapsed(answer)

    def _raise_if_lapsed(self, answer: dict[str, Any]) -> None:
        lapsed = answer.get("lapsed")
        if isinstance(lapsed, dict):
            raise LeaseLapsedError(
                str(lapsed.get("table", self.table)),
                str(lapsed.get("lease", "")),
                float(lapsed.get("ttl_s", 0.0)),
                str(lapsed.get("why", "")),
            )

    def first(self) -> float | None:
        return self._ask("first", {})

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        return self._ask("retry", {"conflict_kind": conflict_kind, "attempt": attempt})

    def _post(self, what: str, body: dict[str, Any], *, timeout_s: float) -> dict[str, Any]:
        """POST ``body`` to the service's ``/what``; its JSON answer (a 409 carries a lapsed lease)."""
        request = urllib.request.Request(
            f"{self.url}/{what}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", TOKEN_HEADER: self._token},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                answer = json.loads(response.read().decode())
        except urllib.error.HTTPError as exc:
            if exc.code != 409:
                raise
            answer = json.loads(exc.read().decode())
        if not isinstance(answer, dict):
            raise ValueError(f"the turn service answered {answer!r}")
        return answer

    def _ask(self, what: str, body: dict[str, Any]) -> float | None:
        try:
            answer = self._post(what, body, timeout_s=self.timeout_s + REQUEST_MARGIN_S)
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
        self._raise_if_lapsed(answer)
        waited = answer.get("waited")
        return float(waited) if isinstance(waited, int | float) and not isinstance(waited, bool) else None
