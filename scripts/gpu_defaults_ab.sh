#!/usr/bin/env bash
# Candidate tile configurations for the default rule (tir_tune_default), per
# shape: `tirc bench --steps 8 --config` of 128x128, 128x64, 64x128, 64x64,
# 32x32 tiles and the skinny 16/32 x 128 (and transposed) tiles with several
# split-K factors, each against cuBLAS in its own process.  Run 157
# (docs/performance.md).  From the repository root on the GPU machine after
# scripts/gpu_pack.sh, with the device tool's carry ["gpu-pack"]; results in
# $OUT/cfg (one .txt per configuration) and a summary on stdout.
export MINITIR_TEST_DATA=$PWD/tests/data
T=gpu-pack/tools/tirc
o=${OUT:-/tmp}/cfg; mkdir -p $o
cfg() { echo "warps=$1 lanes=$2 thread=$3 bk=$4 vec=$5 staging=1 pad=4 splitk=$6 lsr=1"; }
run() { # name sizes config
  $T bench matmul --steps 8 --sizes "$2" --runs 20 --config "$3" --csv $o/$1.csv > $o/$1.txt 2>$o/$1.err || echo "rc=$? $1"; }
A=777x1555x2333,128,768,1536,2049,3000,2000x3000x500,4096,1024,512,64x64x65536,333,6000
run k1 $A "$(cfg 2x4 8x4 8x8 8 4 1)"
run k2 $A "$(cfg 2x2 8x4 8x8 8 4 1)"
run k3 $A "$(cfg 1x4 8x4 8x8 8 4 1)"
run k2b $A "$(cfg 4x2 8x4 4x8 8 4 1)"
run k4 $A "$(cfg 2x4 8x4 4x4 32 4 1)"
run k4s2 $A "$(cfg 2x4 8x4 4x4 32 4 2)"
run k4s4 $A "$(cfg 2x4 8x4 4x4 32 4 4)"
run k5 $A "$(cfg 1x4 8x4 4x2 16 2 1)"
run k5s4 $A "$(cfg 1x4 8x4 4x2 16 2 4)"
run k5s16 $A "$(cfg 1x4 8x4 4x2 16 2 16)"
B=8x4096x4096,1x4096x4096,32x4096x4096,16x8192x8192,64x4096x4096
for s in 1 4 8 16; do run k6s$s $B "$(cfg 1x4 4x8 4x4 32 4 $s)"; done
for s in 1 2 4 8; do run k8s$s $B "$(cfg 1x4 8x4 4x8 16 4 $s)"; done
C=4096x8x4096,4096x32x4096,4096x1x4096,4096x64x4096
for s in 1 4 8 16; do run k7s$s $C "$(cfg 4x1 8x4 4x4 32 4 $s)"; done
for s in 1 2 4 8; do run k9s$s $C "$(cfg 4x1 4x8 8x4 16 4 $s)"; done
for f in $o/*.txt; do n=$(basename $f .txt); awk -v n=$n '$3 ~ /minitir/{print n, $1, $7, $10, $11, $12, $4}' $f; done
rm -f $o/*.err
