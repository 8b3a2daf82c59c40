#!/bin/sh
# regs.sh prints, for every kernel of the committed PTX, the registers per
# thread, the spilled bytes and the shared memory that ptxas assigns for an
# architecture (default sm_90, Hopper), one line a kernel. It needs ptxas
# (Debian's nvidia-cuda-toolkit), not a GPU; the driver's own compiler may
# assign a few more or fewer (Nsight Compute's "Registers Per Thread" is the
# figure that runs).
#
#	sh cuda/bench/regs.sh [sm_80|sm_90]
set -eu
arch=${1:-sm_90}
kernels=$(cd "$(dirname "$0")/../kernels" && pwd)
printf '%-20s %5s %6s %6s %6s\n' kernel regs spillS spillL smem
for f in "$kernels"/*.ptx; do
	ptxas -v -arch="$arch" "$f" -o /dev/null 2>&1 | awk '
		/Compiling entry function/ { match($0, /function .[a-z_0-9]+/); name = substr($0, RSTART + 10, RLENGTH - 10) }
		/spill stores/ { st = $(NF - 7); ld = $(NF - 3) }
		/Used [0-9]+ registers/ {
			for (i = 1; i <= NF; i++) if ($(i) == "registers,") regs = $(i - 1); else if ($(i) == "registers") regs = $(i - 1)
			smem = 0
			for (i = 1; i <= NF; i++) if ($(i) == "smem" || $(i) == "smem,") smem = $(i - 2)
			printf "%-20s %5s %6s %6s %6s\n", name, regs, st, ld, smem
		}'
done
