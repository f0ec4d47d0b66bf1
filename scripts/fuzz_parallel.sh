#!/usr/bin/env bash
# Runs the three CPU fuzzers as many processes at once, one seed each, on a
# machine with many cores (the GPU machine has 16), from the executables of
# a build or of gpu-pack/fuzz: the schedule fuzzer, the GPU-path fuzzer and
# the parser fuzz test.  Prints one line per fuzzer with the seeds, the
# cases the fuzzer itself counted, the time and the failures, and keeps
# each failing process's log; exits 1 on any failure.
#
#   scripts/fuzz_parallel.sh BINDIR JOBS SEED SCHED_N GPU_N PARSER_N
#     BINDIR  folder holding test_sched_fuzz, test_gpu_fuzz, test_parser_fuzz
#     JOBS    processes per fuzzer (seeds SEED .. SEED+JOBS-1)
#     *_N     the cases argument of each process (0: skip that fuzzer)
# Logs go to ${FUZZ_LOGS:-fuzz-logs}/.
set -uo pipefail
[ $# -eq 6 ] || { sed -n '2,14p' "$0"; exit 2; }
bin=$1 jobs=$2 seed=$3
logs=${FUZZ_LOGS:-fuzz-logs}
mkdir -p "$logs"
export MINITIR_TEST_DATA=${MINITIR_TEST_DATA:-$(cd "$(dirname "$0")/.." && pwd)/tests/data}
status=0

# run NAME EXE N VAR: JOBS processes, then the totals from their logs.
run() {
    local name=$1 exe=$2 n=$3 var=$4 t0=$SECONDS pids=() fails=0
    [ "$n" -gt 0 ] || return 0
    for ((j = 0; j < jobs; j++)); do
        env MINITIR_FUZZ_SEED=$((seed + j)) "$var=$n" "$exe" >"$logs/$name-$((seed + j)).log" 2>&1 &
        pids+=($!)
    done
    for ((j = 0; j < jobs; j++)); do
        if ! wait "${pids[$j]}"; then
            fails=$((fails + 1))
            grep -m3 -E "FAILURE|ABORT|internal error|runtime error|ERROR" \
                "$logs/$name-$((seed + j)).log" | sed "s/^/  $name seed $((seed + j)): /"
        fi
    done
    # the fuzzers' own counts: "N cases" on their summary lines
    local cases
    cases=$(cat "$logs/$name"-*.log | grep -oE '[0-9]+ cases' | awk '{s += $1} END {print s + 0}')
    [ "$cases" -gt 0 ] || # the parser test prints only its setting
        cases=$(cat "$logs/$name"-*.log | grep -oE 'FUZZ_CASES=[0-9]+' | awk -F= '{s += $2} END {print s + 0}')
    echo "$name: seeds $seed..$((seed + jobs - 1)), $cases cases, $((SECONDS - t0)) s, $fails of $jobs processes failed"
    [ "$fails" -eq 0 ] || status=1
}

run sched_fuzz "$bin/test_sched_fuzz" "$4" MINITIR_FUZZ_CASES
run gpu_fuzz "$bin/test_gpu_fuzz" "$5" MINITIR_GPU_FUZZ_CASES
run parser_fuzz "$bin/test_parser_fuzz" "$6" MINITIR_FUZZ_CASES
exit $status
