#!/usr/bin/env bash
# Candidates for the untuned default's last weak shapes (docs/performance.md,
# after run 163): long K with both sides small, and the GEMV shapes, each
# against the default, two passes.  On the GPU machine, after
# scripts/gpu_pack.sh, with the device tool's carry ["gpu-pack"]:
#   scripts/gpu_default_candidates.sh OUT
export MINITIR_TEST_DATA=$PWD/tests/data LD_LIBRARY_PATH=$PWD/gpu-pack
T=gpu-pack/tools/tirc
o=$1; mkdir -p $o
c() { echo "warps=$1 lanes=$2 thread=$3 bk=$4 vec=${8:-4} staging=$6 pad=4 splitk=$5 lsr=1 stages=$7"; }
{
for r in 1 2; do
$T bench matmul --steps 8 --runs 20 --sizes 64x64x65536,64x64x16384,64x128x32768,4096x1x4096,1x4096x4096,4096x8x4096,8x4096x4096
$T bench matmul --steps 8 --runs 20 --sizes 64x64x65536,64x64x16384,64x128x32768 --config "$(c 1x2 4x8 4x4 32 64 0 3)"
$T bench matmul --steps 8 --runs 20 --sizes 4096x1x4096,4096x8x4096 --config "$(c 4x1 8x4 4x2 32 16 1 0 2)"
$T bench matmul --steps 8 --runs 20 --sizes 1x4096x4096,8x4096x4096 --config "$(c 1x4 4x8 2x4 32 16 1 0 2)"
done
} > $o/cand.txt 2>$o/cand.err
awk '$3 ~ /minitir/{print $1, $5, $7, $10, $11}' $o/cand.txt
