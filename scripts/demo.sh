#!/usr/bin/env bash
# The Quick start's first command: installs what is missing, builds minitir
# into build/, then shows the seed's matmul steps end to end.  With a CUDA
# GPU it runs `tirc bench matmul` (every step against cuBLAS, per size;
# table on stdout, build/bench-matmul.csv and .png); without one (tirc exits
# 3) it checks every step in the SIMT simulator (`tirc run matmul --sim`).
# Exits with tirc's status (0 ok, 1 verification failure, see tirc --help).
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh || { echo "demo: bootstrap failed" >&2; exit 1; }
if [ ! -f build/build.ninja ]; then
    meson setup build -Dwerror=true >build.setup.log 2>&1 || { cat build.setup.log; exit 1; }
fi
ninja -C build || exit 1

build/tools/tirc bench matmul --csv build/bench-matmul.csv --plot build/bench-matmul.png
rc=$?
if [ "$rc" -eq 3 ]; then
    echo "demo: no CUDA GPU here, so every step is lowered and checked in the SIMT simulator instead" >&2
    build/tools/tirc run matmul --sim
    rc=$?
fi
exit "$rc"
