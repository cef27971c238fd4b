"""The plugin's app behind Airflow's authentication, for the UI's tests: Airflow's simple auth manager with a
user ``viewer`` who may read one DAG only and an ``admin`` who may read every DAG, and a JWT for either."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

MANAGER = f"{__name__}.OnlyMyDagsAuthManager"


class OnlyMyDagsAuthManager(SimpleAuthManager):
    """The simple auth manager, except that the user ``viewer`` may read the DAG ``viewer_dag`` only."""

    #: The one DAG ``viewer`` may read (set by :func:`app_client`).
    viewer_dag: ClassVar[str | None] = None

    def is_authorized_dag(
        self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None
    ) -> bool:
        if user.get_name() == "viewer" and (details is None or details.id != self.viewer_dag):
            return False
        allowed = super().is_authorized_dag(
            method=method, user=user, access_entity=access_entity, details=details
        )
        return bool(allowed)


def app_client(monkeypatch: pytest.MonkeyPatch, viewer_dag: str) -> Any:
    """A test client of the plugin's app behind :class:`OnlyMyDagsAuthManager`, whose ``viewer`` may read
    ``viewer_dag`` only (the metadata DB must be set up: the ``airflow_db`` fixture).

    :param monkeypatch: undoes the auth manager's settings after the test.
    :param viewer_dag: the one DAG ``viewer`` may read.
    """
    from airflow.api_fastapi.app import _AuthManagerState, create_auth_manager
    from fastapi.testclient import TestClient

    from airflow_provider_deltacc.ui.app import create_app

    monkeypatch.setattr(OnlyMyDagsAuthManager, "viewer_dag", viewer_dag)
    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", MANAGER)
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "viewer:viewer,admin:admin")
    monkeypatch.setenv("AIRFLOW__API_AUTH__JWT_SECRET", "deltacc-ui-unit-test-jwt-secret-0123456789")
    monkeypatch.setattr(_AuthManagerState, "instance", None)
    create_auth_manager().init()
    return TestClient(create_app())


def bearer(user: str, role: str) -> dict[str, str]:
    """The ``Authorization`` header of a JWT for ``user`` (``viewer`` or ``admin``) with ``role``."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=user, role=role))
    return {"Authorization": f"Bearer {token}"}
