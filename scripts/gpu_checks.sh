#!/usr/bin/env bash
# What a GPU session checks first, in one device call: every change that
# could only be checked on the CPU since the last GPU run gets its GPU run
# here.  From the repository root on the GPU machine, after
# scripts/gpu_pack.sh here, with the device tool's carry ["gpu-pack"]:
#   scripts/gpu_checks.sh "$OUT" SEED [quick]
# It writes one log per check to OUT and prints a line per check (its exit
# status and the log's last line), so the device tool's short output shows
# the verdicts and the logs come back as files:
#   - the GPU tests (runtime, codegen, the seed's steps, the GPU fuzzer,
#     the expression fuzzer's replayed cases and a slice of new ones);
#   - the PTX assembler's pattern matrix (scripts/ptx/ptxas_matrix.py) and
#     the open case 672's candidate forms (scripts/ptx/probe672.py);
#   - the expression fuzzer on 14 seeds from SEED (scripts/gpu_expr_fuzz.sh);
#   - benchmarks against cuBLAS: Step 8 at 4096^3, 4095^3 and 1000x520x333,
#     the fused matmul + bias + ReLU (Step 6) at 4096^3, bf16 at 4096^3
#     (quick: Step 8 at 4096^3 only).
# GPU_CHECKS_NO_EXPR=1 leaves the expression fuzzer out (to run it in a
# call of its own when the device tool's limit per call is near).
# Exit status: the number of checks that failed (the benchmarks count when
# they fail to run, not for their figures).
set -u
out=${1:?usage: scripts/gpu_checks.sh OUT SEED [quick]}
seed=${2:?usage: scripts/gpu_checks.sh OUT SEED [quick]}
quick=${3:-}
[ -d gpu-pack/tests ] || { echo "no gpu-pack: run scripts/gpu_pack.sh first" >&2; exit 2; }
export MINITIR_TEST_DATA=$PWD/tests/data
mkdir -p "$out"
failed=0

check() { # check NAME TIMEOUT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    [ "$rc" -ne 0 ] && failed=$((failed + 1))
    printf '%-22s rc=%-3s %4ss  %s\n' "$name" "$rc" $((SECONDS - t0)) \
        "$(grep -v '^\s*$' "$out/$name.log" | tail -1 | cut -c1-150)"
}

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/gpu.txt" 2>&1
head -2 "$out/gpu.txt" | tail -1
for t in gpu-pack/tests/test_*gpu*; do
    check "$(basename "$t")" 300 "$t"
done
check ptxas_matrix 120 python3 scripts/ptx/ptxas_matrix.py
check probe672 120 python3 scripts/ptx/probe672.py
[ -z "$quick" ] && [ -z "${GPU_CHECKS_NO_EXPR:-}" ] && check expr_fuzz_gpu 600 scripts/gpu_expr_fuzz.sh "$seed" 14 4000
tirc=gpu-pack/tools/tirc
if [ -n "$quick" ]; then
    check bench_step8 300 "$tirc" bench matmul --runs 20 --steps 8 --sizes 4096
else
    check bench_step8 300 "$tirc" bench matmul --runs 20 --steps 8 --sizes 4096,4095,1000x520x333
    check bench_fused 300 "$tirc" bench fused --runs 20 --steps 6 --epilogue bias+relu --sizes 4096
    check bench_bf16 300 "$tirc" bench matmul --runs 20 --dtype bf16 --sizes 4096
fi
exit "$failed"
