"""Start a Spark Connect server with Delta Lake, from pip's pyspark and the cached Delta jars.

    python -m airflow_provider_deltacc.deployment.connect_server \
        --host 0.0.0.0 --port 15002 --master 'local[*]'
    deltacc-connect-server --print-command        # the spark-submit command line, for a service definition

The server is a Spark driver that stays up: tasks in ``execution_mode="spark_connect"`` reach it through a
``spark_connect`` connection and pay no JVM start. It needs pyspark (4.x ships the Connect server jar), Java
and the Delta jars (``python -m airflow_provider_deltacc.spark_jars.jar_setup --fetch`` puts them in the
cache); nothing of this provider runs inside it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping, Sequence

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002


def server_command(
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    name: str = "deltacc-connect-server",
) -> list[str]:
    """The spark-submit command line that runs a Delta-enabled Spark Connect server.

    Local masters get the small-job defaults of the provider's local sessions (no Spark UI, shuffle and
    snapshot partitions sized to the master's cores); the put-if-absent S3 log store is Delta's S3 log store
    unless ``conf`` or the ``spark-defaults.conf`` spark-submit reads sets one; ``conf`` overrides them and
    anything else.

    :param host: the address the gRPC service binds to.
    :param port: its port.
    :param master: the Spark master of the server's driver.
    :param conf: further Spark settings, applied last.
    :param name: the Spark application name.
    """
    from airflow_provider_deltacc.spark_jars.delta_conf import DELTA_SPARK_CONF, local_defaults
    from airflow_provider_deltacc.spark_jars.delta_jars import cached_jars, pyspark_home
    from airflow_provider_deltacc.spark_jars.put_if_absent import log_store_defaults
    from airflow_provider_deltacc.spark_jars.spark_defaults import spark_defaults

    settings = {**local_defaults(master), **DELTA_SPARK_CONF}
    settings.update(log_store_defaults({**spark_defaults(), **(conf or {})}))
    settings["spark.connect.grpc.binding.address"] = host
    settings["spark.connect.grpc.binding.port"] = str(port)
    settings.update(conf or {})
    command = [
        str(pyspark_home() / "bin" / "spark-submit"),
        "--class",
        CONNECT_SERVER_CLASS,
        "--name",
        name,
        "--master",
        master,
        "--jars",
        ",".join(str(jar) for jar in cached_jars()),
    ]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return command


def server_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment: its Python workers run this interpreter, and pip's Spark home is used.

    :param base: the environment to start from (``os.environ`` when None).
    """
    from airflow_provider_deltacc.spark_jars.delta_jars import pyspark_home

    env = dict(os.environ if base is None else base)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_HOME", str(pyspark_home()))
    return env


def _conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--conf takes KEY=VALUE, got {text!r}")
    return key.strip(), value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server in the foreground (it replaces this process), or print its command line.

    :param argv: the arguments (``sys.argv[1:]`` when None).
    """
    parser = argparse.ArgumentParser(prog="deltacc-connect-server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (0.0.0.0 in a container)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--master", default="local[*]", help="the server driver's Spark master")
    parser.add_argument("--conf", type=_conf_pair, action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--print-command", action="store_true", help="print the command and exit")
    args = parser.parse_args(argv)
    from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError

    try:
        command = server_command(host=args.host, port=args.port, master=args.master, conf=dict(args.conf))
    except DeltaJarsMissingError as exc:
        parser.exit(2, f"deltacc-connect-server: {exc}\n")
    if args.print_command:
        print(shlex.join(command))
        return 0
    os.execve(command[0], command, server_environment())
    return 0  # pragma: no cover - execve does not return


if __name__ == "__main__":
    sys.exit(main())
