#!/usr/bin/env bash
# The direct PTX emitter (src/codegen/cg_direct.c, TIR_CG_PIPELINE_DIRECT)
# on the GPU in one device call: the GPU tests with every kernel compiled
# by it where it can (MINITIR_CG_PIPELINE=direct), Step 8 run against
# cuBLAS on the shapes of issue 13, an A/B benchmark (LLVM's short pipeline,
# then direct, twice, in alternation) and the cold compile time on the
# GPU host's CPU.  From the repository root on the GPU machine, after
# scripts/gpu_pack.sh here, with the device tool's carry ["gpu-pack"]:
#   scripts/gpu_direct.sh OUT [tests|bench|all|unroll]
# One log per part goes to OUT; a line per part is printed.
# unroll: the direct emitter's unrolling of small serial loops (as LLVM's
# O3 would; direct_unroll): Steps 1-8 at 512 and 1000x520x333 checked
# against cuBLAS with MINITIR_CG_PIPELINE=direct-unroll, then benchmarked
# at 512, 1024 and 1000x520x333 with LLVM (short: Steps 1-6 get
# default<O3>), direct (the default: a kernel with a small loop goes to
# LLVM), direct-unroll (such loops unrolled as LLVM would) and direct-all
# (every loop rolled), twice, in alternation (run 160).  Steps 4-6
# stay with LLVM in all three (their local arrays), Step 7 and Step 8 at
# 1024 are the direct emitter's in all but short: controls.
set -u
out=${1:?usage: scripts/gpu_direct.sh OUT [tests|bench|all|unroll]}
what=${2:-all}
[ -d gpu-pack/tests ] || { echo "no gpu-pack: run scripts/gpu_pack.sh first" >&2; exit 2; }
export MINITIR_TEST_DATA=$PWD/tests/data
mkdir -p "$out"
tirc=gpu-pack/tools/tirc
failed=0
check() { # check NAME TIMEOUT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    [ "$rc" -ne 0 ] && failed=$((failed + 1))
    printf '%-24s rc=%-3s %4ss  %s\n' "$name" "$rc" $((SECONDS - t0)) \
        "$(grep -v '^\s*$' "$out/$name.log" | tail -1 | cut -c1-150)"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1
sizes=512,1024,2048,4096,8192,4095,1000x520x333,1024x1024x4096
if [ "$what" = unroll ]; then
    for st in 1 2 3 4 5 6 7 8; do
        for s in 512 1000x520x333; do
            check "run-$st-$s" 120 env MINITIR_CG_PIPELINE=direct-unroll "$tirc" run matmul --step "$st" --size "$s"
        done
    done
    for pass in 1 2; do
        for p in short direct direct-unroll direct-all; do
            check "bench-$p-$pass" 300 env MINITIR_CG_PIPELINE=$p "$tirc" bench matmul --runs 20 \
                --steps 1-8 --sizes 512,1024,1000x520x333
        done
    done
    exit "$failed"
fi
if [ "$what" != bench ]; then
    for t in gpu-pack/tests/test_*gpu*; do
        check "direct-$(basename "$t")" 300 env MINITIR_CG_PIPELINE=direct "$t"
    done
    for s in 512 1024 2048 4096 4095 1000x520x333 1024x1024x4096 65x33x17 127x129x31; do
        check "run-$s" 120 "$tirc" run matmul --step 8 --size "$s" --opt direct
    done
    check run-stages4 120 "$tirc" run matmul --step 8 --size 512 --opt direct \
        --config "warps=1x8 lanes=4x8 thread=8x4 bk=32 vec=4 staging=0 pad=4 splitk=4 lsr=1 stages=4"
    check run-stages3 120 "$tirc" run matmul --step 8 --size 1000x520x333 --stages 3 --opt direct
    check run-step7 120 "$tirc" run matmul --step 7 --size 1000x520x333 --opt direct
fi
if [ "$what" != tests ]; then
    check compile-llvm 120 "$tirc" ptx matmul --step 8 --size 4096 -v --repeat 8 --no-cache -o /dev/null
    check compile-direct 120 "$tirc" ptx matmul --step 8 --size 4096 -v --repeat 8 --opt direct -o /dev/null
    for pass in 1 2; do
        check "bench-llvm-$pass" 300 "$tirc" bench matmul --runs 20 --steps 8 --sizes "$sizes"
        check "bench-direct-$pass" 300 "$tirc" bench matmul --runs 20 --steps 8 --sizes "$sizes" --opt direct
    done
fi
exit "$failed"
