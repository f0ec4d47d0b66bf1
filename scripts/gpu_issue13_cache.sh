#!/usr/bin/env bash
# Issue 13's open GPU checks of the twenty-sixth session, in one device
# call (~3 min): the codegen cache on the GPU host (cold and warm compile,
# three bench processes sharing MINITIR_CACHE_DIR with the driver's JIT
# cache emptied first), the fused matmul + bias + ReLU default against the
# plain matmul default at 4096^3 (fuse_reduction_epilogue's init without
# `0 +` under ReLU: 127 registers), and the GPU tests.  From the
# repository root on the GPU machine after scripts/gpu_pack.sh here, with
# the device tool's carry ["gpu-pack"]:   scripts/gpu_issue13_cache.sh "$OUT"
set -u
out=${1:?usage: scripts/gpu_issue13_cache.sh OUT}
T=gpu-pack/tools/tirc
[ -x "$T" ] || { echo "no gpu-pack: run scripts/gpu_pack.sh first" >&2; exit 2; }
mkdir -p "$out"
{
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
lscpu | grep "Model name"
echo "== ptx, no cache, repeat 8"; $T ptx matmul --size 4096 -v --repeat 8 --no-cache -o /dev/null 2>&1 | tail -3
echo "== ptx, cache, repeat 4"; $T ptx matmul --size 4096 -v --repeat 4 -o /dev/null 2>&1 | tail -3
rm -rf ~/.nv/ComputeCache
for p in 1 2 3; do
    echo "== bench process $p (MINITIR_CACHE_DIR)"
    MINITIR_CACHE_DIR=$out/cgcache $T bench matmul --runs 20 --steps 8 --sizes 4096,1000x520x333 2>&1 | grep minitir
done
echo "== fused default and plain default, 4096^3, two passes"
for p in 1 2; do
    $T tune fused --size 4096 --trials 1 --threads 4 2>&1 | grep -iv "^trial\|^\[" | tail -3
    $T tune matmul --size 4096 --trials 1 --threads 4 2>&1 | grep -iv "^trial\|^\[" | tail -3
done
echo "== GPU tests"
GPU_CHECKS_NO_EXPR=1 timeout 400 scripts/gpu_checks.sh "$out/checks" 1938100001 quick
} 2>&1 | tee "$out/issue13_cache.log"
