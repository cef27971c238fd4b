"""The Delta conflicts view in a real browser: a ``dag.test()`` run whose first try loses a real conflict to
Airflow's retry, a real ``airflow api-server`` serving the metadata DB it wrote, headless Chromium logged in
through the simple auth manager's login page. Anonymous requests are refused."""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

import pytest

from airflow_provider_deltacc.operators import DeltaMergeOperator
from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy
from tests.integration.airflow_face.rival import Rival
from tests.support.airflow_runs import serialize_dag
from tests.support.api_server import ADMIN_PASSWORD, ADMIN_USER, api_server
from tests.support.browser import headless_chromium

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, p STRING, v STRING"
DAG_ID = "deltacc_test_ui"
DOCS_IMG = Path(__file__).resolve().parents[3] / "docs" / "img"


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _log_in(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{url}/")
    wait = WebDriverWait(driver, 60)
    user = wait.until(expected_conditions.presence_of_element_located((By.NAME, "username")))
    user.send_keys(ADMIN_USER)
    driver.find_element(By.NAME, "password").send_keys(ADMIN_PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(lambda d: any(c["name"] == "_token" for c in d.get_cookies()))


def _save(driver: Any, path: Path) -> None:
    driver.save_screenshot(str(path))
    if os.environ.get("DELTACC_DOCS_SCREENSHOTS") == "1":  # refresh docs/img from this run
        DOCS_IMG.mkdir(exist_ok=True)
        shutil.copy(path, DOCS_IMG / path.name)


def test_the_conflicts_page_and_the_task_view_show_both_tries_and_the_reason(
    airflow_db: Path, spark: SparkSession, rival: Rival, tmp_path: Path
) -> None:
    from airflow.sdk import DAG
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    orders = str(tmp_path / "orders")
    spark.createDataFrame([(1, "a", "old")], SCHEMA).write.format("delta").partitionBy("p").save(orders)

    def blind_append_into_a(spec: dict[str, Any]) -> None:
        spark.createDataFrame([(9, "a", "rival")], SCHEMA).write.format("delta").mode("append").save(orders)

    rival.plan("merge", orders, blind_append_into_a, gate_column="id", task_id="merge_orders")
    policy = DeltaConflictRetryPolicy(
        min_delay=timedelta(seconds=1), max_delay=timedelta(seconds=1), jitter=0
    )
    with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaMergeOperator(
            task_id="merge_orders",
            table=orders,
            source={"kind": "rows", "rows": [[1, "a", "merged"]], "schema": SCHEMA},
            keys=["id", "p"],
            commit_retry={"max_attempts": 1},
            execution_mode="in_process",
            retries=2,
            retry_policy=policy,
        )
    serialize_dag(dag, tmp_path / "dags")
    dr = dag.test()
    rival.check()
    assert str(dr.get_task_instance("merge_orders").state) == "success"

    with api_server(tmp_path / "api-home", dags_folder=tmp_path / "dags") as server:
        task_path = f"/deltacc/task-instance/{DAG_ID}/{dr.run_id}/merge_orders/-1"
        # Anonymous requests are refused: the plugin's app sits behind Airflow's authentication.
        assert _status(f"{server.url}/deltacc/conflicts") == 401
        assert _status(f"{server.url}{task_path}") == 401

        with headless_chromium() as driver:
            _log_in(driver, server.url)

            driver.get(f"{server.url}/deltacc/conflicts")
            page = driver.find_element(By.TAG_NAME, "body").text
            chart = driver.find_element(By.CSS_SELECTOR, f"svg.deltacc-chart[data-table='{orders}']")
            assert chart.find_elements(By.CSS_SELECTOR, "rect.bar.conflicts")
            assert f"{orders}\n1 commits, 1 conflicts (APPEND x1), 1 Airflow retries" in page, page
            assert "Delta APPEND conflict on table " + orders + " partition [p=a]" in page
            assert "This write is already pinned to its partitions (p)" in page
            # The metadata DB is the test session's: other tests' DAGs may have pairs of their own.
            pairs = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "table.pairs tr.pair")]
            ours = [text for text in pairs if f"{DAG_ID}.merge_orders" in text]
            assert len(ours) == 1 and "APPEND x1" in ours[0], pairs
            _save(driver, tmp_path / "delta-conflicts.png")

            # Filtered to our table (another spelling of it), its tasks' waits; then who is fighting over it.
            driver.get(f"{server.url}/deltacc/conflicts?table={quote('file:' + orders)}&dag_id={DAG_ID}")
            sections = driver.find_elements(By.CSS_SELECTOR, "section.table h2")
            assert [h.text for h in sections] == [orders]
            picked = driver.find_element(By.CSS_SELECTOR, "select[name=table] option:checked")
            assert picked.get_attribute("value") == orders
            waits = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "table.waits tr.task-waits")]
            assert len(waits) == 1 and waits[0].startswith(f"{DAG_ID}.merge_orders 2 1 1 "), waits
            _save(driver, tmp_path / "delta-conflicts-filtered.png")
            driver.find_element(By.CSS_SELECTOR, "a.fighting").click()
            WebDriverWait(driver, 30).until(lambda d: "/deltacc/table" in d.current_url)
            commits = {
                row.find_element(By.CSS_SELECTOR, "td").text: row
                for row in driver.find_elements(By.CSS_SELECTOR, "table.commits tr.commit")
            }
            assert set(commits) == {"v0", "v1", "v2"}, list(commits)
            rival_commit, merge_commit = commits["v1"], commits["v2"]
            assert "outside" in (rival_commit.get_attribute("class") or "")  # the rival wrote it with Spark
            assert rival_commit.text.endswith("1"), rival_commit.text  # it made one writer lose
            assert "airflow" in (merge_commit.get_attribute("class") or "")
            assert f"{DAG_ID}.merge_orders" in merge_commit.text
            [winner] = driver.find_elements(By.CSS_SELECTOR, "table.winners tr.winner")
            assert winner.text.startswith("v1 ") and f"{DAG_ID}.merge_orders" in winner.text, winner.text
            assert driver.find_elements(By.CSS_SELECTOR, "table.outside tr.outside-writer")
            _save(driver, tmp_path / "delta-table-fighting.png")

            # The per-task-instance view, opened as the Airflow UI opens the "Delta commit report" extra
            # link (the URL the links endpoint returns): every try, its attempts and its reason.
            links_url = (
                f"{server.url}/api/v2/dags/{DAG_ID}/dagRuns/{dr.run_id}/taskInstances/merge_orders/links"
            )
            driver.get(links_url)
            links = json.loads(driver.find_element(By.TAG_NAME, "pre").text)["extra_links"]
            link = urlsplit(links["Delta commit report"])
            assert unquote(link.path) == task_path, links
            driver.get(f"{server.url}{link.path}")
            tries = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "table.tries tr.try")]
            assert len(tries) == 2, tries
            assert tries[0].startswith("try 1 RETRY attempt 1 of 1: APPEND [p=a] (winner: WRITE v1)"), tries[
                0
            ]
            assert "Airflow try 2 of 3 starts in 1 s from a fresh snapshot" in tries[0]
            assert tries[1].startswith("try 2 committed attempt 1 of 1: committed"), tries[1]
            _save(driver, tmp_path / "delta-commit-report.png")

            # The views inside the Airflow UI: the task instance's "Delta commit report" tab (an iframe whose
            # URL the UI fills in) and the "Delta conflicts" page in the navigation.
            # The React UI renders the iframe (and may render it again) and the iframe loads its rows after
            # the page has loaded: each poll enters the current iframe afresh.
            wait = WebDriverWait(driver, 60, ignored_exceptions=(StaleElementReferenceException,))
            frame = expected_conditions.frame_to_be_available_and_switch_to_it((By.CSS_SELECTOR, "iframe"))

            def tries_shown(d: Any) -> list[Any] | None:
                d.switch_to.default_content()
                if not frame(d):
                    return None
                rows: list[Any] = d.find_elements(By.CSS_SELECTOR, "table.tries tr.try")
                return rows if len(rows) >= 2 else None

            run_in_ui = f"{server.url}/dags/{DAG_ID}/runs/{quote(dr.run_id, safe='')}"
            driver.get(f"{run_in_ui}/tasks/merge_orders/plugin/delta-commit-report")
            assert len(wait.until(tries_shown)) == 2
            driver.switch_to.default_content()
            driver.get(f"{server.url}/plugin/delta-conflicts")
            assert wait.until(
                expected_conditions.presence_of_all_elements_located((By.CSS_SELECTOR, "iframe"))
            )
            _save(driver, tmp_path / "delta-conflicts-in-airflow.png")
    for shot in ("delta-conflicts.png", "delta-conflicts-filtered.png", "delta-table-fighting.png"):
        assert (tmp_path / shot).stat().st_size > 0
