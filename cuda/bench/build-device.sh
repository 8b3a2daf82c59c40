#!/bin/sh
# build-device.sh builds, on the machine without a GPU, everything
# cuda/bench/device.sh runs on the machine with one, into .gpu/ at the
# repository root (ignored by git; carry it with the run tool: carry
# [".gpu"]). It needs Go and the CUDA headers (cuda.h, from Debian's
# nvidia-cuda-toolkit), not a GPU. Run it from anywhere:
#
#	sh cuda/bench/build-device.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
mkdir -p .gpu
go test -c -tags cuda -o .gpu/cuda.test ./cuda
go test -c -tags cuda -o .gpu/bench.test ./internal/tool/bench
go build -tags cuda -o .gpu/rlpost ./cmd/rlpost
cp cuda/bench/torch_bench.py cuda/bench/device.sh .gpu/
git rev-parse HEAD > .gpu/commit 2>/dev/null || echo unknown > .gpu/commit
ls -l .gpu
