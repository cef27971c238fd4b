"""Dependency paths inside one DAG: two tasks with a path between them never run at the same time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class Reachability:
    """The transitive closure of a DAG's upstream edges, as one bit set of ancestors per task.

    :param upstream: task id -> ids of its direct upstream tasks (every task of the DAG, provider or not).
    """

    def __init__(self, *, upstream: Mapping[str, Iterable[str]]) -> None:
        ids = sorted(upstream)
        self._bit = {task_id: 1 << index for index, task_id in enumerate(ids)}
        parents = {t: [p for p in upstream[t] if p in self._bit] for t in ids}
        self._ancestors: dict[str, int] = {}
        for task_id in _topological(parents):
            mask = 0
            for parent in parents[task_id]:
                mask |= self._ancestors[parent] | self._bit[parent]
            self._ancestors[task_id] = mask

    def connected(self, a: str, b: str) -> bool:
        """Whether a dependency path leads from ``a`` to ``b`` or from ``b`` to ``a``."""
        return bool(self._ancestors[b] & self._bit[a] or self._ancestors[a] & self._bit[b])


def _topological(parents: Mapping[str, list[str]]) -> list[str]:
    children: dict[str, list[str]] = {t: [] for t in parents}
    waiting = {t: len(ps) for t, ps in parents.items()}
    for task_id, ps in parents.items():
        for parent in ps:
            children[parent].append(task_id)
    ready = [t for t, n in waiting.items() if n == 0]
    order: list[str] = []
    while ready:
        task_id = ready.pop()
        order.append(task_id)
        for child in children[task_id]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    if len(order) != len(parents):
        raise ValueError("the DAG has a dependency cycle; Airflow would refuse it")
    return order


def dag_reachability(dag: object) -> Reachability:
    """The reachability of every task of an Airflow DAG (task groups are flattened into their tasks)."""
    tasks = getattr(dag, "task_dict", {})
    return Reachability(upstream={tid: set(task.upstream_task_ids) for tid, task in tasks.items()})
