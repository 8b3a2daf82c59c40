#!/bin/sh
# End-to-end check of `rlpost serve` from Python: builds the binary (or uses
# $RLPOST_BIN), then runs the stdlib client against a live server on
# 127.0.0.1. Needs python3 (3.10 or later) and, without $RLPOST_BIN, go.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${RLPOST_BIN:-}
if [ -z "$bin" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$root" && go build -o "$tmp/rlpost" ./cmd/rlpost)
	bin=$tmp/rlpost
fi
export PYTHONDONTWRITEBYTECODE=1
python3 "$here/test_serve.py" "$bin"
