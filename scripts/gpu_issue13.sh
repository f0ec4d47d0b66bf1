#!/usr/bin/env bash
# Issue 13's "done when" table in as few device calls as the device tool's
# 10-minute limit allows: tunes each shape for MIN minutes into one
# database, then benchmarks Step 8 with that database against cuBLAS in one
# process (and the untuned default at the square sizes).  From the
# repository root on the GPU machine, after scripts/gpu_pack.sh here, with
# the device tool's carry ["gpu-pack"]; the database lives in DIR, which
# must survive between the calls (the GPU machine keeps files while warm):
#   scripts/gpu_issue13.sh tune1 DIR MIN   512, 1024, 2048, 4095 cubed
#   scripts/gpu_issue13.sh tune2 DIR MIN   1000x520x333, 1024x1024x4096,
#                                          batch 16x512^3, fused 4096^3
#   scripts/gpu_issue13.sh tune3 DIR MIN   4096 and 8192 cubed
#   scripts/gpu_issue13.sh bigtile DIR     Step 8 at 2048, 4096, 8192 cubed with
#                                          the default and 128-accumulator
#                                          thread tiles (8x16, 16x8), which the
#                                          space leaves out (at most 64);
#                                          run 144: all slower, the cap stays
#   scripts/gpu_issue13.sh wide DIR        the same with blocks of 16 warps (the
#                                          space has at most 8); run 145: all
#                                          slower
#   scripts/gpu_issue13.sh bench DIR       Step 8 with the database, and
#                                          the default at the square sizes
# (the fused and batch figures are tune2's: tirc tune compares its best
# with cuBLAS GEMM + the epilogue kernel, or strided-batched GEMM).  DIR
# should be an ignored path such as build-gpu13, kept on the warm machine;
# the machine goes back after a short idle, so bring the database back
# through $OUT (gzip it: the device tool carries at most 64 MiB with the
# pack) and carry it to the next call.
# Every command's output goes to DIR/<part>.log as well as to stdout.
set -u
part=${1:?usage: scripts/gpu_issue13.sh tune1|tune2|tune3|bigtile|wide|bench DIR [MIN]}
dir=${2:?usage: scripts/gpu_issue13.sh tune1|tune2|tune3|bigtile|wide|bench DIR [MIN]}
min=${3:-1}
tirc=gpu-pack/tools/tirc
[ -x "$tirc" ] || { echo "no gpu-pack: run scripts/gpu_pack.sh first" >&2; exit 2; }
export MINITIR_TEST_DATA=$PWD/tests/data
mkdir -p "$dir"
db=$dir/issue13.db
# --trials: a cap above what MIN minutes allow, so that MIN decides (tirc
# tune's default cap of 200 trials stopped 1.25-minute runs after 41-75 s,
# run 136).
tune() { "$tirc" tune "$@" --trials 100000 --minutes "$min" --threads 16 --db "$db"; }
case $part in
tune1)
    for s in 512x512x512 1024x1024x1024 2048x2048x2048 4095x4095x4095; do
        tune matmul --size "$s"
    done ;;
tune2)
    tune matmul --size 1000x520x333
    tune matmul --size 1024x1024x4096
    tune matmul --size 512x512x512 --batch 16
    tune fused --size 4096x4096x4096 ;;
tune3)
    for s in 4096x4096x4096 8192x8192x8192; do
        tune matmul --size "$s"
    done ;;
bigtile)
    # An A/B before widening the space: 195-220 registers, no spills
    # (ptxas 13 here), one block of 256 threads per SM instead of two.
    for c in "" \
        "warps=2x4 lanes=8x4 thread=8x16 bk=8 vec=4 staging=1 pad=4 splitk=1 lsr=1 stages=0" \
        "warps=2x4 lanes=8x4 thread=8x16 bk=16 vec=4 staging=1 pad=4 splitk=1 lsr=1 stages=0" \
        "warps=2x4 lanes=8x4 thread=16x8 bk=16 vec=4 staging=1 pad=4 splitk=1 lsr=1 stages=0" \
        "warps=2x4 lanes=4x8 thread=16x8 bk=8 vec=4 staging=1 pad=4 splitk=1 lsr=1 stages=0" \
        "warps=2x4 lanes=8x4 thread=8x16 bk=16 vec=4 staging=0 pad=4 splitk=1 lsr=1 stages=3"; do
        echo "== config: ${c:-the default}"
        "$tirc" bench matmul --runs 20 --steps 8 --sizes 2048,4096,8192 ${c:+--config "$c"}
    done ;;
wide)
    # 512 threads of 8x8 (124-128 registers): 256x128 or 128x256 blocks,
    # one per SM; bk 8 with staging copies half rounds of B (local_check
    # took it from the twenty-ninth session).
    for c in "" \
        "warps=4x4 lanes=8x4 thread=8x8 bk=8 vec=4 staging=1 pad=4 splitk=1 lsr=1 stages=0" \
        "warps=4x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=1 pad=4 splitk=1 lsr=1 stages=0" \
        "warps=4x4 lanes=4x8 thread=8x8 bk=16 vec=4 staging=1 pad=4 splitk=1 lsr=1 stages=0" \
        "warps=4x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 pad=4 splitk=1 lsr=1 stages=3" \
        "warps=4x4 lanes=8x4 thread=8x8 bk=8 vec=4 staging=0 pad=4 splitk=1 lsr=1 stages=4"; do
        echo "== config: ${c:-the default}"
        "$tirc" bench matmul --runs 20 --steps 8 --sizes 2048,4096,8192 ${c:+--config "$c"}
    done ;;
bench)
    "$tirc" bench matmul --runs 20 --steps 8 --db "$db" \
        --sizes 512,1024,2048,4096,8192,4095,1000x520x333,1024x1024x4096
    "$tirc" bench matmul --runs 20 --steps 8 --sizes 512,1024,2048,4096,8192 ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac 2>&1 | tee "$dir/$part.log"
