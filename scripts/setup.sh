#!/usr/bin/env bash
# Set up everything the demo and the tests need, on a fresh machine: uv, the locked virtual
# environment, Java (JRE and JDK), PostgreSQL, Redis, Prometheus's promtool, Chromium and chromedriver,
# Maven, the Delta Lake jars (fetched once from Maven Central into .cache/jars) and Hadoop's
# MiniYARNCluster (into .cache/).
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION="0.13.9"
export UV_PYTHON_DOWNLOADS=never
export DELTACC_JAR_CACHE="${DELTACC_JAR_CACHE:-$PWD/.cache/jars}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  echo "setup: installing $* with apt-get"
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$@" >/dev/null
}

if command -v uv >/dev/null 2>&1; then
  UV=uv
else
  if [ ! -x .cache/uv-bootstrap/bin/uv ]; then
    echo "setup: bootstrapping uv $UV_VERSION"
    python3 -m venv .cache/uv-bootstrap
    .cache/uv-bootstrap/bin/pip install --quiet "uv==$UV_VERSION"
  fi
  UV=.cache/uv-bootstrap/bin/uv
fi

# Debian's packages the tests start, gathered so that apt-get runs (and updates its lists) once:
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
# The YARN cluster-mode tests compile a small MiniYARNCluster launcher (tests/support/mini_yarn/).
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
# The PostgreSQL lease-store tests start their own throw-away server from these binaries.
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
# The Celery broker of the multi-host deployment's tests (tests/support/redis_server.py starts its own server).
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# The alert rules' test runs Prometheus's own promtool on docs/alerts (tests/integration/alerts/).
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# The UI's browser test drives Debian's headless Chromium; installed here so the test does not pay for it
# (tests/support/browser.py installs them the same way when they are still missing).
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || missing+=(chromium chromium-driver)
# Maven fetches the jars below when the cache lacks them.
if ! ls "$DELTACC_JAR_CACHE"/delta-spark_* >/dev/null 2>&1 || ! ls .cache/mini-yarn-*/fetched >/dev/null 2>&1; then
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
fi
# apt-get and uv both mostly wait on the network: they run side by side.
apt_pid=
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}" & apt_pid=$!; fi

PY=$(command -v python3.11 || command -v python3)
# Bytecode is compiled at install time: this environment may set PYTHONDONTWRITEBYTECODE, and every
# Airflow and Spark process would otherwise recompile its imports from source.
"$UV" sync --frozen --all-extras --compile-bytecode --python "$PY" --quiet
if [ -n "$apt_pid" ]; then wait "$apt_pid"; fi

# Reports the cached jars (Delta, and hadoop-aws with the AWS SDK modules S3A uses); fetches them (once)
# only when the cache lacks them.
if ! .venv/bin/python -m airflow_provider_deltacc.spark_jars.jar_setup 2>/dev/null; then
  command -v mvn >/dev/null 2>&1 || apt_install maven
  .venv/bin/python -m airflow_provider_deltacc.spark_jars.jar_setup --fetch
fi
# Hadoop's MiniYARNCluster for the deploy_mode=cluster tests: fetched (once) with Maven into .cache/.
if ! ls .cache/mini-yarn-*/fetched >/dev/null 2>&1; then
  command -v mvn >/dev/null 2>&1 || apt_install maven
  .venv/bin/python -m tests.support.mini_yarn >/dev/null
fi
