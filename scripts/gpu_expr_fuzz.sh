#!/usr/bin/env bash
# The expression fuzzer (tests/test_expr_fuzz_gpu.c: every case kind, the
# replayed cases included) on the GPU machine, JOBS seeds at once, with one
# summary line per seed and the first failures in full on stdout (the
# device tool returns few files).  A failure says whether the same PTX is
# right at JIT level 0 (the PTX assembler's bug) or not (minitir's).
# usage, from the repository root on the GPU machine after
# scripts/gpu_pack.sh here:  scripts/gpu_expr_fuzz.sh FIRST_SEED [JOBS] [CASES]
# exit 0 when every seed passed.
set -u
first=${1:?usage: scripts/gpu_expr_fuzz.sh FIRST_SEED [JOBS] [CASES]}
jobs=${2:-14}
n=${3:-4000}
bin=gpu-pack/tests/test_expr_fuzz_gpu
[ -x "$bin" ] || { echo "no $bin: run scripts/gpu_pack.sh first" >&2; exit 2; }
dir=$(mktemp -d)
for i in $(seq 0 $((jobs - 1))); do
    MINITIR_FUZZ_SEED=$((first + i)) timeout 540 "$bin" "$n" > "$dir/$i.txt" 2>&1 &
done
wait
status=0
for i in $(seq 0 $((jobs - 1))); do
    grep -h "expr fuzz on the GPU" "$dir/$i.txt" || echo "# seed $((first + i)): no summary (crash or timeout)"
    if ! grep -q "PASSED  \] 2 test" "$dir/$i.txt"; then
        status=1
        grep -h -A40 "differs at element\|failed:" "$dir/$i.txt" | head -80
    fi
done
rm -rf "$dir"
exit $status
