#!/usr/bin/env bash
# Candidates for two shapes the default rule serves worst (64x64x65536 and
# 777x1555x2333) and their neighbours: run 159 (docs/performance.md).  From
# the repository root on the GPU machine after scripts/gpu_pack.sh; results
# in $OUT/c2 and a summary on stdout.
export MINITIR_TEST_DATA=$PWD/tests/data
T=gpu-pack/tools/tirc
o=${OUT:-/tmp}/c2; mkdir -p $o
run() { $T bench matmul --steps 8 --sizes "$2" --runs 20 --config "$3" > $o/$1.txt 2>&1 || echo "rc=$? $1"; }
X=64x64x65536,32x32x65536,64x64x16384
run a32s64 $X "warps=1x4 lanes=8x4 thread=4x2 bk=16 vec=2 staging=1 pad=4 splitk=64 lsr=1"
run a32s32 $X "warps=1x4 lanes=8x4 thread=4x2 bk=16 vec=2 staging=1 pad=4 splitk=32 lsr=1"
run a3264s64 $X "warps=1x4 lanes=8x4 thread=4x4 bk=16 vec=4 staging=1 pad=4 splitk=64 lsr=1"
run a16s64 $X "warps=1x4 lanes=4x8 thread=4x2 bk=32 vec=2 staging=1 pad=4 splitk=64 lsr=1"
run a64s64st $X "warps=2x4 lanes=8x4 thread=4x4 bk=32 vec=4 staging=0 pad=4 splitk=64 lsr=1 stages=3"
Y=777x1555x2333,700x1500x2300,900x1700x2500
run b4s2 $Y "warps=2x4 lanes=8x4 thread=4x4 bk=32 vec=4 staging=1 pad=4 splitk=2 lsr=1"
run b4s3 $Y "warps=2x4 lanes=8x4 thread=4x4 bk=32 vec=4 staging=1 pad=4 splitk=3 lsr=1"
run b3s2 $Y "warps=1x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=1 pad=4 splitk=2 lsr=1"
run b3 $Y "warps=1x4 lanes=8x4 thread=8x8 bk=8 vec=4 staging=1 pad=4 splitk=1 lsr=1"
run b1s2 $Y "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=1 pad=4 splitk=2 lsr=0"
run b3st $Y "warps=1x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 pad=4 splitk=1 lsr=1 stages=3"
run b3s2st $Y "warps=1x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 pad=4 splitk=2 lsr=1 stages=3"
run bdef $Y "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=1 pad=4 splitk=4 lsr=0"
for f in $o/*.txt; do n=$(basename $f .txt); awk -v n=$n '$3 ~ /minitir/{print n, $1, $7, $10, $11, $12, $4}' $f; done
