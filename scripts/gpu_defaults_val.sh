#!/usr/bin/env bash
# The default rule (tir_tune_default, Step 8) against cuBLAS at 41 shapes
# from 1x4096x4096 to 16384x16384x64 in one process, and the 128 x 128
# tiles of the old rule beside it where the choice changed.  Run 158
# (docs/performance.md).  From the repository root on the GPU machine after
# scripts/gpu_pack.sh, with the device tool's carry ["gpu-pack"]; results
# in $OUT and a summary on stdout.
export MINITIR_TEST_DATA=$PWD/tests/data
T=gpu-pack/tools/tirc
o=${OUT:-/tmp}; mkdir -p $o
S=64,100,128,257,333,512,768,1024,1536,2048,2049,3000,4095,4096,4097,6000,8192,1x4096x4096,8x4096x4096,32x4096x4096,64x4096x4096,128x4096x4096,4096x4096x32,4096x4096x128,4096x32x4096,4096x8x4096,4096x64x4096,4096x1x4096,16x8192x8192,128x128x16384,256x256x32768,64x64x65536,8192x1024x1024,1024x8192x1024,16384x16384x64,2000x3000x500,777x1555x2333,1000x520x333,1024x1024x4096,4096x1024x11008,4096x11008x4096
$T bench matmul --steps 8 --sizes $S --runs 20 > $o/new.txt 2>$o/new.err || echo "rc=$? new"
cfg() { echo "warps=2x4 lanes=8x4 thread=8x8 bk=8 vec=4 staging=1 pad=4 splitk=1 lsr=$1"; }
$T bench matmul --steps 8 --sizes 4095,6000,2000x3000x500,3000,2049,1536 --runs 20 --config "$(cfg 0)" > $o/old0.txt 2>$o/old0.err || echo "rc=$? old0"
$T bench matmul --steps 8 --sizes 8192,4096,2048 --runs 20 --config "$(cfg 1)" > $o/old1.txt 2>$o/old1.err || echo "rc=$? old1"
$T bench matmul --steps 8 --sizes 8192,4095,6000 --runs 20 --config "warps=1x4 lanes=8x4 thread=8x8 bk=8 vec=4 staging=1 pad=4 splitk=1 lsr=1" > $o/k3.txt 2>$o/k3.err || echo "rc=$? k3"
$T bench matmul --steps 8 --sizes 768 --runs 20 --config "warps=2x4 lanes=8x4 thread=4x4 bk=32 vec=4 staging=1 pad=4 splitk=2 lsr=1" > $o/old768.txt 2>&1
for f in $o/*.txt; do n=$(basename $f .txt); awk -v n=$n '$3 ~ /minitir/{print n, $1, $7, $10, $11, $12, $4, $9}' $f; done
