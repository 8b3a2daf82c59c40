#!/bin/sh
# gen.sh compiles every kernels/*.cu to PTX for compute_80 into the folder
# given as the first argument (default: the kernels folder itself), as
# `go generate ./cuda/...` and CI run it. The flags are part of the
# contract with the Go side:
#   -fmad=false  no fused multiply-adds, so every expression rounds as the
#                Go code it mirrors does (and the bits do not depend on
#                what the compiler chose to fuse);
#   no -lineinfo it would embed the absolute path of each source file, and
#                the committed PTX must be the same bytes on every machine.
set -eu
kernels=$(cd "$(dirname "$0")" && pwd)
out=${1:-$kernels}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$kernels"
for src in *.cu; do
	nvcc -ptx -arch=compute_80 -fmad=false -o "$out/${src%.cu}.ptx" "$src"
done
