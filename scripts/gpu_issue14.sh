#!/usr/bin/env bash
# Issue 14's table in one device call (twenty-fifth session): the GPU tests
# but the expression fuzzer (its replayed case 775 is open on purpose), then
# tirc bench at 4096^3, 8192^3 and the odd shape for bf16, f16 and TF32
# (TF32's default on sm_90 is wgmma where it fits; --tc-off wgmma is the
# mma.sync kernel), and wgmma's stages.  From the repository root on the GPU
# machine, after scripts/gpu_pack.sh:  scripts/gpu_issue14.sh OUT
set -u
out=${1:?usage: scripts/gpu_issue14.sh OUT}
export MINITIR_TEST_DATA=$PWD/tests/data
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
for t in gpu-pack/tests/test_*gpu*; do
    n=$(basename "$t")
    [ "$n" = test_expr_fuzz_gpu ] && continue
    timeout 300 "$t" >"$out/$n.log" 2>&1
    echo "$n rc=$? $(grep -v '^\s*$' "$out/$n.log" | tail -1 | cut -c1-120)"
done
grep "wgmma case" "$out/test_codegen_gpu.log"
T=gpu-pack/tools/tirc
b() { # b NAME ARGS...: one bench, its result lines
    local name=$1
    shift
    timeout 300 "$T" bench matmul --runs 20 "$@" >"$out/bench_$name.log" 2>&1
    echo "== $name: $*"
    grep -E "minitir|cublas" "$out/bench_$name.log" | awk '{print $1, $4, $5, $6, $7, $8, $9, $11, $12, $13}'
}
b tf32 --dtype tf32 --sizes 4096,8192,2048,1000x520x336
b tf32_mma --dtype tf32 --tc-off wgmma --sizes 4096,8192,2048
b bf16 --dtype bf16 --sizes 4096,8192,1000x520x336
b f16 --dtype f16 --sizes 4096,8192,1000x520x336
b wg_s4 --dtype tf32 --tc-on wgmma --stages 4 --sizes 4096
b wg_s2 --dtype tf32 --tc-on wgmma --stages 2 --sizes 4096
b wg_1024 --dtype tf32 --tc-on wgmma --sizes 1024
b tf32_again --dtype tf32 --sizes 4096,8192
