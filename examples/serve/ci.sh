#!/bin/sh
# The Python side of `rlpost serve` against live servers: installs the
# package in python/ from this checkout into a fresh virtual environment
# with no package index (pip install --no-index; its build backend needs
# nothing), then runs python/tests (each test starts `rlpost serve` on
# 127.0.0.1 from $RLPOST_BIN, or builds it with go build).
#
#   sh examples/serve/ci.sh            # RLPOST_BIN=path to skip the build
#   RLPOST_PYTHON=/usr/bin/python3 sh examples/serve/ci.sh
#
# The venv sees the interpreter's own packages (--system-site-packages), so
# the torch, aiohttp, cloudpickle and haproxy checks run where those are
# installed and are skipped, each with its reason, where not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${RLPOST_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${RLPOST_BIN:-}
if [ -z "$bin" ]; then
	(cd "$root" && go build -o "$tmp/rlpost" ./cmd/rlpost)
	bin=$tmp/rlpost
fi
"$py" -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --no-index --disable-pip-version-check -q "$root/python"
# Installed, not the checkout: run from the tests folder, whose sys.path
# entry is the tests folder only.
"$tmp/venv/bin/python" -c 'import rlpost, sys; sys.exit(0 if "site-packages" in rlpost.__file__ else "rlpost imported from " + rlpost.__file__)'
cd "$root/python/tests"
RLPOST_BIN=$bin PYTHONDONTWRITEBYTECODE=1 "$tmp/venv/bin/python" -W ignore::ResourceWarning -m unittest -v 2>&1
