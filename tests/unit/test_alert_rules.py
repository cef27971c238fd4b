"""The example alert rules in docs/alerts name only metrics the provider sends, through the example
statsd_exporter mapping: a renamed metric, or a rule on one that does not exist, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from airflow_provider_deltacc.observability.metrics import table_metric_name

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "docs" / "alerts"
METRICS_SOURCE = ROOT / "airflow_provider_deltacc" / "observability" / "metrics.py"
#: statsd metric type of each emitter call, as statsd_exporter's match_metric_type names it.
TYPES = {"incr": "counter", "timing": "observer", "gauge": "gauge"}


def _sent() -> dict[str, str]:
    """Every per-table StatsD name the provider sends for one table, with its type (from the emitter calls in
    the code; the per-kind and per-outcome names with an example kind and outcome)."""
    table = table_metric_name("/lake/orders")
    found: dict[str, str] = {}
    for call, metric in re.findall(r'\b(incr|timing|gauge)\(\s*f?"([^"]+)"', METRICS_SOURCE.read_text()):
        if metric.startswith("{"):  # the emitter's own sends, under the prefix
            continue
        metric = re.sub(r"\{[^}]*\}", lambda m: "timeout" if "outcome" in m.group() else "append", metric)
        found[f"airflow.deltacc.table.{table}.{metric}"] = TYPES[call]
    return found


def _prometheus_name(statsd_name: str, kind: str) -> tuple[str, dict[str, str]] | None:
    """The name and labels the mapping gives one StatsD metric, or None when it is dropped. As in
    statsd_exporter's glob mode, ``*`` matches one dot-separated part and the first matching rule wins."""
    for rule in yaml.safe_load((ALERTS / "statsd_exporter_mapping.yml").read_text())["mappings"]:
        groups = re.fullmatch(re.escape(rule["match"]).replace(r"\*", "([^.]+)"), statsd_name)
        if groups is None or rule.get("match_metric_type", kind) != kind:
            continue
        if rule.get("action") == "drop":
            return None

        def fill(text: str, captured: re.Match[str] = groups) -> str:
            return re.sub(r"\$\{?(\d)\}?", lambda m: captured.group(int(m.group(1))), text)

        return fill(rule["name"]), {k: fill(v) for k, v in (rule.get("labels") or {}).items()}
    return None


def test_every_metric_sent_per_table_gets_a_prometheus_name_with_its_table() -> None:
    sent = _sent()
    assert len(sent) >= 10  # the walk over the code found the emitter calls
    for statsd_name, kind in sent.items():
        mapped = _prometheus_name(statsd_name, kind)
        assert mapped is not None, statsd_name
        assert mapped[1]["table"] == table_metric_name("/lake/orders"), (statsd_name, mapped)


def test_every_alert_rule_names_a_metric_the_mapping_produces() -> None:
    produced: set[str] = set()
    for statsd_name, kind in _sent().items():
        mapped = _prometheus_name(statsd_name, kind)
        assert mapped is not None
        name = mapped[0]
        produced |= {f"{name}_sum", f"{name}_count"} if kind == "observer" else {name}
    rules = yaml.safe_load((ALERTS / "prometheus_rules.yml").read_text())["groups"][0]["rules"]
    assert rules
    for rule in rules:
        used = set(re.findall(r"\bdeltacc_[a-z_]+", str(rule["expr"])))
        assert used and used <= produced, (rule["alert"], sorted(used - produced))
        assert rule["annotations"]["summary"]
