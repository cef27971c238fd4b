"""``submit_options``: the spark-submit arguments a task may set, typed as ``SparkSubmitOperator`` names them.

:class:`SparkSubmitOptions` holds them; a plain dict with the same keys is read into one. Every value is
checked before anything starts, against the type ``SparkSubmitHook`` takes.

The hook sets some arguments itself. Of those, ``jars``, ``py_files`` and ``files`` take the task's own
after the provider's (the Delta and S3 jars, the core bundle), and ``env_vars`` adds the task's variables
under the driver's own (``PYSPARK_PYTHON``, the log settings). The others it owns outright: ``conf`` (use
``spark_conf``), ``name`` (the job is named after its task), ``application_args``, ``java_class`` and
``conn_id`` (use ``conn_id``). A key ``SparkSubmitHook`` does not take, or one of those, is refused with
the key, its fix and the keys that are accepted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_deltacc.exceptions import DeltaCCInputError

#: Arguments the provider sets and the task's own value is added to (``files`` is joined where the spec
#: file is shipped, see :meth:`~airflow_provider_deltacc.hooks.submit.SparkSubmitRunner.ship_spec`).
JOINED = frozenset({"jars", "py_files", "env_vars"})
#: Arguments the provider owns, and where the task says what it wants instead.
OWNED = {
    "conf": "put Spark settings in spark_conf",
    "name": "the job is named after its task (deltacc-<dag>-<task>)",
    "application_args": "the job's arguments are its spec",
    "java_class": "the job is the provider's Python application",
    "conn_id": "pass conn_id to the operator",
}
#: Comma-separated lists ``SparkSubmitHook`` takes as one string; a list of entries is joined.
_PATH_LISTS = ("files", "py_files", "archives", "jars", "packages", "exclude_packages", "repositories")
_COUNTS = ("total_executor_cores", "executor_cores", "num_executors", "status_poll_interval")
_TEXTS = (
    "driver_class_path",
    "executor_memory",
    "driver_memory",
    "keytab",
    "principal",
    "proxy_user",
    "spark_binary",
    "properties_file",
    "yarn_queue",
)
_FLAGS = ("verbose", "use_krb5ccache", "track_driver_via_k8s_api", "yarn_track_via_rm_api")
DEPLOY_MODES = ("client", "cluster")


@dataclass(frozen=True, kw_only=True, repr=False)
class SparkSubmitOptions:
    """The ``SparkSubmitHook`` arguments of a ``spark_submit`` task, under ``SparkSubmitOperator``'s names.

    Unset arguments keep the hook's defaults (and the connection's extras, such as ``deploy-mode``).

    :param files: files to place in each executor's working directory (comma-separated, or a list).
    :param py_files: extra ``.zip``/``.egg``/``.py`` files for the Python path, after the provider's bundle.
    :param archives: archives to extract in each executor's working directory.
    :param driver_class_path: extra class path entries for the driver.
    :param jars: extra jars, after the provider's Delta (and S3) jars.
    :param packages: Maven coordinates to resolve at submit time (``group:artifact:version``).
    :param exclude_packages: Maven coordinates to leave out when resolving ``packages``.
    :param repositories: extra Maven repositories for ``packages``.
    :param total_executor_cores: all executors' cores (standalone and Mesos).
    :param executor_cores: each executor's cores.
    :param executor_memory: each executor's memory, e.g. ``2g``.
    :param driver_memory: the driver's memory, e.g. ``1g``.
    :param keytab: a Kerberos keytab file.
    :param principal: the Kerberos principal for ``keytab``.
    :param proxy_user: the user to impersonate.
    :param num_executors: how many executors to launch (YARN, Kubernetes).
    :param status_poll_interval: seconds between driver status polls in cluster mode.
    :param env_vars: environment variables for the driver, under the provider's own.
    :param verbose: pass ``--verbose`` to spark-submit.
    :param spark_binary: the spark-submit command to run.
    :param properties_file: a Spark properties file to load instead of ``spark-defaults.conf``.
    :param yarn_queue: the YARN queue to submit to.
    :param deploy_mode: ``client`` or ``cluster``; unset: the connection's ``deploy-mode`` extra.
    :param use_krb5ccache: use the Kerberos ticket cache.
    :param post_submit_commands: shell commands to run after the job ends.
    :param track_driver_via_k8s_api: follow a Kubernetes cluster-mode driver through the Kubernetes API.
    :param yarn_track_via_rm_api: follow a YARN cluster-mode application through the ResourceManager API.
    :param yarn_rm_auth: authentication for the ResourceManager API (a ``requests`` auth object).
    """

    files: str | None = None
    py_files: str | None = None
    archives: str | None = None
    driver_class_path: str | None = None
    jars: str | None = None
    packages: str | None = None
    exclude_packages: str | None = None
    repositories: str | None = None
    total_executor_cores: int | None = None
    executor_cores: int | None = None
    executor_memory: str | None = None
    driver_memory: str | None = None
    keytab: str | None = None
    principal: str | None = None
    proxy_user: str | None = None
    num_executors: int | None = None
    status_poll_interval: int | None = None
    env_vars: Mapping[str, str] | None = None
    verbose: bool | None = None
    spark_binary: str | None = None
    properties_file: str | None = None
    yarn_queue: str | None = None
    deploy_mode: str | None = None
    use_krb5ccache: bool | None = None
    post_submit_commands: Sequence[str] | None = None
    track_driver_via_k8s_api: bool | None = None
    yarn_track_via_rm_api: bool | None = None
    yarn_rm_auth: Any = None

    def __post_init__(self) -> None:
        for name in _PATH_LISTS:
            object.__setattr__(self, name, _path_list(name, getattr(self, name)))
        for name in _COUNTS:
            _check(name, getattr(self, name), int, "a positive whole number, e.g. 2", positive=True)
        for name in _TEXTS:
            _check(name, getattr(self, name), str, "a string, e.g. '2g' for a memory size")
        for name in _FLAGS:
            _check(name, getattr(self, name), bool, "True or False")
        if self.deploy_mode is not None and self.deploy_mode not in DEPLOY_MODES:
            raise _bad("deploy_mode", self.deploy_mode, f"one of {', '.join(DEPLOY_MODES)}")
        if self.env_vars is not None:
            if not isinstance(self.env_vars, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.env_vars.items()
            ):
                raise _bad("env_vars", self.env_vars, "a dict of variable names to string values")
            object.__setattr__(self, "env_vars", dict(self.env_vars))
        if self.post_submit_commands is not None:
            commands = self.post_submit_commands
            if isinstance(commands, str) or not all(isinstance(c, str) for c in commands):
                raise _bad("post_submit_commands", commands, "a list of shell commands")
            object.__setattr__(self, "post_submit_commands", list(commands))

    @classmethod
    def of(cls, options: SparkSubmitOptions | Mapping[str, Any] | None) -> SparkSubmitOptions:
        """``options`` as :class:`SparkSubmitOptions`: itself, a dict of its arguments, or None (none).

        :raises DeltaCCInputError: naming ``submit_options.<key>`` for a key the provider owns, one
            ``SparkSubmitHook`` does not take, or a value of the wrong type.
        """
        if options is None:
            return cls()
        if isinstance(options, SparkSubmitOptions):
            return options
        if not isinstance(options, Mapping):
            raise DeltaCCInputError(
                f"submit_options={options!r} must be SparkSubmitOptions(...) or a dict of its arguments, "
                'e.g. SparkSubmitOptions(driver_memory="2g")',
                field="submit_options",
                value=options,
            )
        for key in options:
            if key in OWNED:
                raise DeltaCCInputError(
                    f"submit_options.{key}: the provider sets it itself; {OWNED[key]}",
                    field=f"submit_options.{key}",
                    value=options[key],
                )
            if key not in accepted():
                raise DeltaCCInputError(
                    f"submit_options.{key}: SparkSubmitHook takes no such argument; use one of "
                    f"{', '.join(sorted(accepted()))}",
                    field=f"submit_options.{key}",
                    value=options[key],
                )
        return cls(**options)

    def __repr__(self) -> str:
        given = ", ".join(f"{name}={value!r}" for name, value in self.hook_kwargs().items())
        return f"SparkSubmitOptions({given})"

    def hook_kwargs(self) -> dict[str, Any]:
        """The arguments that are set, as ``SparkSubmitHook`` takes them (the others keep its defaults)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }


def accepted() -> frozenset[str]:
    """The arguments a task may set: every field of :class:`SparkSubmitOptions`."""
    return frozenset(f.name for f in dataclasses.fields(SparkSubmitOptions))


def check_submit_options(options: SparkSubmitOptions | Mapping[str, Any] | None) -> dict[str, Any]:
    """The options that are set, once every key and value is one a task may give.

    :param options: the task's ``submit_options``.
    :raises DeltaCCInputError: naming ``submit_options.<key>``, the value and the fix.
    """
    return SparkSubmitOptions.of(options).hook_kwargs()


def joined(ours: list[str], theirs: Any) -> str:
    """A comma-separated list: the provider's entries, then the task's (a string or a list)."""
    extra = [theirs] if isinstance(theirs, str) else list(theirs or [])
    return ",".join([*ours, *(str(item) for item in extra if item)])


def _path_list(name: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return ",".join(value)
    raise _bad(name, value, "a comma-separated string or a list of strings")


def _check(name: str, value: Any, kind: type, expected: str, *, positive: bool = False) -> None:
    wrong_kind = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
    if value is not None and (wrong_kind or (positive and value <= 0)):
        raise _bad(name, value, expected)


def _bad(name: str, value: Any, expected: str) -> DeltaCCInputError:
    return DeltaCCInputError(
        f"submit_options.{name}={value!r} must be {expected}", field=f"submit_options.{name}", value=value
    )
