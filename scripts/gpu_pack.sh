#!/usr/bin/env bash
# Packs what the GPU machine needs into gpu-pack/ (git-ignored): the GPU
# machine has no LLVM and no cmocka, so we carry the built library
# (stripped), the GPU test and tool executables, libcmocka and libsqlite3.  Executables
# find the library through their $ORIGIN/.. run path.
# Usage: scripts/gpu_pack.sh [build-dir]
set -euo pipefail
# (awk reads all of ldconfig's output: an early exit would SIGPIPE ldconfig,
# and pipefail then stopped this script at random, leaving a pack without tools)
cd "$(dirname "$0")/.."
b=${1:-build}
rm -rf gpu-pack && mkdir -p gpu-pack/tests gpu-pack/tools gpu-pack/examples gpu-pack/bench gpu-pack/fuzz
cp -L "$b/libminitir.so.0" gpu-pack/ && strip --strip-unneeded gpu-pack/libminitir.so.0
cp -L "$(ldconfig -p | awk '/libcmocka.so.0 / && !f {print $NF; f = 1}')" gpu-pack/libcmocka.so.0
# libminitir needs SQLite (the tuning database).  The GPU machine's stock
# CUDA image most likely has it (Python's sqlite3 module uses it), but we
# carry ours; libminitir's run path ($ORIGIN, meson.build) finds it here.
cp -L "$(ldconfig -p | awk '/libsqlite3.so.0 / && !f {print $NF; f = 1}')" gpu-pack/libsqlite3.so.0
# XGBoost (tirc tune --model xgb; loaded with dlopen) and what it needs, where installed
for l in libxgboost.so.0 libdmlc.so.0 libgomp.so.1; do
    f=$(ldconfig -p | awk -v l="$l" '$1 == l && !f {print $NF; f = 1}')
    [ -n "$f" ] && cp -L "$f" gpu-pack/$l
done
# libminitir's run path finds libxgboost.so.0 here, but a library's run
# path does not reach its own dependencies: the dlopen'ed libxgboost looks
# for libdmlc.so.0 in the system's paths only, and the GPU machine has none,
# so `auto` fell back to kNN there (runs 122-139 say "model knn").  Give the
# carried copies a run path of their own (patchelf, a Debian package).
if [ -f gpu-pack/libxgboost.so.0 ]; then
    if command -v patchelf >/dev/null; then
        for l in libxgboost.so.0 libdmlc.so.0; do
            [ -f gpu-pack/$l ] && chmod u+w gpu-pack/$l && patchelf --set-rpath '$ORIGIN' gpu-pack/$l
        done
    else
        echo "gpu_pack: no patchelf (apt-get install patchelf): the pack's libxgboost finds" \
             "libdmlc only with LD_LIBRARY_PATH=gpu-pack on the GPU machine" >&2
    fi
fi
for t in "$b"/tests/test_*gpu*; do [ -f "$t" ] && [ -x "$t" ] && cp "$t" gpu-pack/tests/; done
# The CPU fuzzers too: the GPU machine's many cores run long fuzzing
# campaigns in minutes (scripts/fuzz_parallel.sh).
for t in test_sched_fuzz test_gpu_fuzz test_parser_fuzz; do
    [ -x "$b/tests/$t" ] && cp "$b/tests/$t" gpu-pack/fuzz/
done
for t in rt_smoke cg_dump tirc tcpeak; do [ -x "$b/tools/$t" ] && cp "$b/tools/$t" gpu-pack/tools/; done
for t in "$b"/examples/*; do [ -f "$t" ] && [ -x "$t" ] && cp "$t" gpu-pack/examples/; done
for t in "$b"/bench/*; do [ -f "$t" ] && [ -x "$t" ] && cp "$t" gpu-pack/bench/; done
du -sh gpu-pack
