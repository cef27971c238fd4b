"""Where this deployment's tasks run: all on this machine, or possibly on several.

A SQLite lease store is a file on one machine's disk. It coordinates writers and maintenance only when every
task that writes or maintains a table runs on that machine: under the LocalExecutor (or the
SequentialExecutor of older Airflow versions), and in ``dag.test()``, which runs every task in the process
that called it. Any other executor (Celery, Kubernetes, Edge, AWS, ...) may run tasks anywhere.

The check reads the worker's own ``[core] executor``: Airflow's deployments give workers the scheduler's
configuration, with one known exception handled here: the Kubernetes executor's pod template (the official
Helm chart's) sets ``AIRFLOW__CORE__EXECUTOR=LocalExecutor`` in every task pod, which marks itself with
``AIRFLOW_IS_K8S_EXECUTOR_POD``.
"""

from __future__ import annotations

import os
import sys

#: Executors that run every task on the scheduler's machine.
LOCAL_EXECUTORS = frozenset({"LocalExecutor", "SequentialExecutor"})
#: Set by the Kubernetes executor in every task pod it starts.
K8S_EXECUTOR_POD_ENV = "AIRFLOW_IS_K8S_EXECUTOR_POD"


def executor_names(config_value: str) -> list[str]:
    """The executors an Airflow 3 ``[core] executor`` value names, as class names.

    It may list several (``LocalExecutor,CeleryExecutor``), give aliases (``fast:LocalExecutor``) or
    module paths (``my.module.MyExecutor``), and per-team lists after ``;`` (``LocalExecutor;team_a=
    CeleryExecutor``); every one of them counts, since any may run a task.

    :param config_value: the option's value.
    """
    names: list[str] = []
    for team_list in config_value.split(";"):
        executors = team_list.split("=", 1)[1] if "=" in team_list else team_list
        for entry in executors.split(","):
            entry = entry.strip()
            if not entry:
                continue
            target = entry.split(":", 1)[1] if ":" in entry else entry
            names.append(target.strip().rsplit(".", 1)[-1])
    return names


def running_in_dag_test() -> bool:
    """True inside a task that ``dag.test()`` runs.

    ``dag.test()`` runs each task in the calling process through the task SDK's ``InProcessTestSupervisor``,
    which installs an ``InProcessSupervisorComms`` as the task runner's ``SUPERVISOR_COMMS`` for the task's
    run (and for a deferred task's trigger, which it runs inline). A task run by any executor, including
    ``dag.test(use_executor=True)``, talks to a supervisor in another process through a socket instead.
    """
    # Looked up, not imported: a process that never imported the supervisor module is not in dag.test().
    supervisor = sys.modules.get("airflow.sdk.execution_time.supervisor")
    task_runner = sys.modules.get("airflow.sdk.execution_time.task_runner")
    comms_class = getattr(supervisor, "InProcessSupervisorComms", None)
    if task_runner is None or not isinstance(comms_class, type):
        return False
    return isinstance(getattr(task_runner, "SUPERVISOR_COMMS", None), comms_class)


def tasks_may_run_elsewhere() -> str | None:
    """Why tasks may run on other machines than this one, or None when they all run here.

    None inside ``dag.test()``, and when every configured executor is local (and this is not a Kubernetes
    executor pod); otherwise the reason, naming the executor setting.
    """
    if running_in_dag_test():
        return None
    if os.environ.get(K8S_EXECUTOR_POD_ENV, "").strip().lower() in ("1", "true", "yes"):
        return f"this task runs in a KubernetesExecutor pod (${K8S_EXECUTOR_POD_ENV} is set)"
    from airflow.sdk.configuration import conf

    configured = str(conf.get("core", "executor", fallback="LocalExecutor") or "LocalExecutor")
    others = [name for name in executor_names(configured) if name not in LOCAL_EXECUTORS]
    if not others:
        return None
    return (
        f"[core] executor = {configured.strip()} ({', '.join(dict.fromkeys(others))} may run tasks anywhere)"
    )
