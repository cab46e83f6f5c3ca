#!/usr/bin/env bash
# Installs what weir needs on a fresh machine: checks Java 17+, creates .venv,
# installs weir with its pinned dependencies. Sourced by scripts/serve and scripts/test.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${WEIR_EXTRAS:-}"

if ! command -v java >/dev/null 2>&1; then
  echo "weir needs Java 17 or newer (Spark runs on the JVM): install it, e.g. 'apt-get install -y openjdk-17-jre-headless'" >&2
  exit 1
fi
JAVA_MAJOR="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
if [ -z "$JAVA_MAJOR" ] || [ "$JAVA_MAJOR" -lt 17 ]; then
  echo "weir needs Java 17 or newer; found: $(java -version 2>&1 | head -1)" >&2
  exit 1
fi

PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ] || [ ! -x "$VENV/bin/pip" ]; then
  "$PY" -m venv "$VENV"  # also completes a .venv whose creation was interrupted
fi
STAMP="$VENV/.weir-installed${EXTRAS:+-$EXTRAS}"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
  "$VENV/bin/pip" install -q --upgrade pip
  if [ -n "$EXTRAS" ]; then
    "$VENV/bin/pip" install -q -e "$ROOT[$EXTRAS]"
  else
    "$VENV/bin/pip" install -q -e "$ROOT"
  fi
  touch "$STAMP"
fi
