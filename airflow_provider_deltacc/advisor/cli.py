"""``python -m airflow_provider_deltacc.advisor DAGS...`` (also ``deltacc-advisor``).

Exit codes: 0 done (or no "will conflict" with ``--strict``), 1 ``--strict`` and a pair will conflict,
2 bad input (a missing path, DAG import errors, an unreadable reports file).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from airflow_provider_deltacc.advisor.findings import FindingLevel
from airflow_provider_deltacc.contract.exceptions import AdvisorInputError

EXIT_OK, EXIT_WILL_CONFLICT, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deltacc-advisor",
        description="Predict which provider tasks can make each other fail with Delta conflicts, before they "
        "run: pairs that can run at the same time on one table, judged with the conflict matrix.",
    )
    parser.add_argument("paths", nargs="+", help="DAG files or folders of DAG files")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any pair will conflict (for CI)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--hide-safe", action="store_true", help="leave out the pairs that cannot conflict")
    parser.add_argument(
        "--duration",
        type=float,
        default=60.0,
        help="minutes a DAG run is assumed to last when the DAG has no dagrun_timeout (default 60)",
    )
    parser.add_argument("--horizon-days", type=float, default=7.0, help="days of schedules compared (7)")
    parser.add_argument(
        "--reference",
        help="ISO time the schedule horizon starts at (default: now, UTC)",
    )
    parser.add_argument(
        "--read-tables",
        action="store_true",
        help="read each path-addressed table's partition columns from its Delta log (delta-rs; optional)",
    )
    parser.add_argument(
        "--reports",
        action="append",
        default=[],
        help="a JSON file of commit reports of past runs (a list, or one report per line); repeatable",
    )
    parser.add_argument(
        "--xcom",
        action="store_true",
        help="read the deltacc_report XComs of past runs of the analysed DAGs from the Airflow metadata DB",
    )
    parser.add_argument(
        "--history",
        action="store_true",
        help="with --reports: read each table's Delta history (delta-rs) to name unmatched winners",
    )
    return parser


def _reference(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise AdvisorInputError(f"--reference={text!r} is not an ISO time, e.g. 2026-11-23T00:00") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def run(argv: Sequence[str] | None = None) -> tuple[int, str]:
    """Run the CLI; return the exit code and what it prints.

    :param argv: the arguments (``sys.argv[1:]`` when None).
    """
    from airflow_provider_deltacc.advisor.analysis import analyse, delta_log_columns
    from airflow_provider_deltacc.advisor.loader import load_dags
    from airflow_provider_deltacc.advisor.observed import attach_observed, load_reports, xcom_reports
    from airflow_provider_deltacc.advisor.render import render_json, render_table, summary_line

    args = _parser().parse_args(argv)
    try:
        if args.duration <= 0 or args.horizon_days <= 0:
            raise AdvisorInputError("--duration and --horizon-days must be positive")
        reports = [r for path in args.reports for r in load_reports(path)]
        dags = load_dags(args.paths)
        analysis = analyse(
            dags,
            reference=_reference(args.reference),
            horizon=timedelta(days=args.horizon_days),
            default_duration=timedelta(minutes=args.duration),
            read_columns=delta_log_columns() if args.read_tables else None,
        )
        if args.xcom:
            reports += xcom_reports(analysis.dag_ids)
    except AdvisorInputError as exc:
        return EXIT_BAD_INPUT, f"deltacc-advisor: {exc}"
    extra: dict[str, object] = {}
    unmatched: list[str] = []
    if reports:
        analysis, unmatched = attach_observed(analysis, reports, read_history=args.history)
        extra["observed_unpredicted"] = unmatched
    code = EXIT_WILL_CONFLICT if args.strict and analysis.count(FindingLevel.WILL) else EXIT_OK
    if args.json:
        return code, render_json(analysis, extra)
    shown = [f for f in analysis.findings if not (args.hide_safe and f.level is FindingLevel.CANNOT)]
    single = analysis.dag_ids[0] if len(analysis.dag_ids) == 1 else None
    parts = [summary_line(analysis), "", render_table(shown, dag_id=single)]
    if unmatched:
        parts += ["", "Observed conflicts no predicted pair explains:", *(f"  {line}" for line in unmatched)]
    if code == EXIT_WILL_CONFLICT:
        parts += ["", f"--strict: {analysis.count(FindingLevel.WILL)} pair(s) will conflict"]
    return code, "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """The console script ``deltacc-advisor``."""
    code, text = run(argv)
    stream = sys.stderr if code == EXIT_BAD_INPUT else sys.stdout
    stream.write(text + "\n")
    stream.flush()
    return code
