"""Count how often a job spec is built or parsed: every typed construction goes through
:func:`~airflow_provider_deltacc.contract.spec_build.job_spec`, every read of the dict or JSON form through
:func:`~airflow_provider_deltacc.contract.spec_parse.parse_spec` (which then builds it too)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

import airflow_provider_deltacc.contract.spec_build as spec_build
import airflow_provider_deltacc.contract.spec_parse as spec_parse

PACKAGE = "airflow_provider_deltacc"


def count_spec_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record ``"job_spec"`` or ``"parse_spec"`` for each call, wherever the package looks the function up
    (a module that imported it by name, or the defining module for a lazy import).

    :param monkeypatch: the test's monkeypatch.
    :returns: the calls, in order.
    """
    calls: list[str] = []
    for name, real in (("job_spec", spec_build.job_spec), ("parse_spec", spec_parse.parse_spec)):

        def counting(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(*args, **kwargs)

        for module_name, module in list(sys.modules.items()):
            if module_name.split(".")[0] == PACKAGE and getattr(module, name, None) is real:
                monkeypatch.setattr(module, name, counting)
    return calls
