#!/usr/bin/env bash
# Make the venv with PyPI's pyspark (Spark in local mode runs on the machine's Java 17,
# Debian's openjdk-17-jre-headless), for dist/spark/ and its test (scripts/spark-test.sh).
#
# usage: scripts/spark-venv.sh [VENV]   (default /opt/h2l-spark-venv; a second run is a no-op)
set -euo pipefail
venv=${1:-/opt/h2l-spark-venv}
if "$venv/bin/python" -c 'import pyspark' 2>/dev/null; then
    exit 0
fi
command -v java >/dev/null || {
    echo "spark-venv.sh: no java (apt-get install openjdk-17-jre-headless)" >&2
    exit 1
}
python3 -m venv "$venv" 2>/dev/null || {
    apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
}
"$venv/bin/pip" install --quiet pyspark
"$venv/bin/python" -c 'import pyspark; print("pyspark", pyspark.__version__, "in", "'"$venv"'")'
