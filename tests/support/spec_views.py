"""The JSON view of a job spec that test fakes record: what a spark-submit driver would read of it."""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.spec_json import spec_to_json


def json_view(spec: Any) -> Any:
    """A typed spec's JSON form (see :func:`~airflow_provider_deltacc.contract.spec_json.spec_to_json`);
    anything else (a dict) as given.

    :param spec: the spec a fake hook or runner was given.
    :raises ValueError: for a typed spec whose source function was not made to travel (it has no JSON form).
    """
    return spec_to_json(spec) if isinstance(spec, JobSpec) else spec
