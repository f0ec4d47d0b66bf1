#!/usr/bin/env bash
# Long fuzzing runs with a fresh seed: the schedule fuzzer
# (tests/test_sched_fuzz.c), the GPU-path fuzzer (tests/test_gpu_fuzz.c)
# and the parser fuzz test (tests/test_parser_fuzz.c), each for a third of
# the given time, in rounds of a fixed number of cases with seeds seed,
# seed+1, ...  Prints the seed, cases, time and result of each round and of
# each fuzzer (MINITIR_FUZZ_VERBOSE=1: of every round; otherwise of the
# failed ones), and exits non-zero when any round failed (its output, with
# the seed and case to reproduce, is kept in build/fuzz-logs/).
#
#   scripts/fuzz.sh [minutes] [seed]
#     minutes  total time (default 3)
#     seed     first seed (default: from the date, so each run is fresh)
# Environment: MINITIR_FUZZ_BUILD (build directory, default build; an
# ASan build works too), MINITIR_FUZZ_ROUND_{SCHED,GPU,PARSER} (cases per
# round).
set -uo pipefail
cd "$(dirname "$0")/.."

minutes=${1:-3}
seed=${2:-$(date +%s)}
case $minutes in '' | *[!0-9]*) echo "fuzz.sh: minutes must be a whole number" >&2; exit 2 ;; esac
case $seed in '' | *[!0-9]*) echo "fuzz.sh: seed must be a whole number" >&2; exit 2 ;; esac
build=${MINITIR_FUZZ_BUILD:-build}

if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Dwerror=true >"$build.setup.log" 2>&1 ||
        { cat "$build.setup.log"; exit 1; }
fi
ninja -C "$build" -j2 tests/test_sched_fuzz tests/test_gpu_fuzz tests/test_parser_fuzz \
    >"$build.build.log" 2>&1 || { tail -50 "$build.build.log"; exit 1; }
logs=$build/fuzz-logs
mkdir -p "$logs"

status=0
budget=$((minutes * 60 / 3))
[ "$budget" -lt 1 ] && budget=1

# run NAME EXE ROUND_CASES ENV_VAR: rounds until the budget is spent.
run() {
    local name=$1 exe=$2 round=$3 var=$4
    local start=$SECONDS cases=0 rounds=0 failed=0 s=$seed
    while [ $((SECONDS - start)) -lt "$budget" ] || [ "$rounds" -eq 0 ]; do
        local log=$logs/$name-$s.log t0=$SECONDS
        if env MINITIR_FUZZ_SEED="$s" MINITIR_FUZZ_ITERS="$round" "$var=$round" "$exe" \
            >"$log" 2>&1; then
            [ -n "${MINITIR_FUZZ_VERBOSE:-}" ] &&
                echo "  $name seed $s: $round cases, $((SECONDS - t0)) s, ok"
            rm -f "$log"
        else
            echo "  $name seed $s: $round cases, $((SECONDS - t0)) s, FAILED (see $log)"
            grep -m5 -E "FAILURE|ABORT|internal error|ERROR:|runtime error" "$log" | sed 's/^/    /'
            failed=$((failed + 1))
        fi
        cases=$((cases + round))
        rounds=$((rounds + 1))
        s=$((s + 1))
    done
    local verdict=ok
    [ "$failed" -gt 0 ] && { verdict="$failed of $rounds rounds FAILED"; status=1; }
    echo "$name: seeds $seed..$((s - 1)), $cases cases, $((SECONDS - start)) s, $verdict"
}

echo "fuzz.sh: $minutes min, first seed $seed, build $build"
t=$build/tests
run sched_fuzz "$t/test_sched_fuzz" "${MINITIR_FUZZ_ROUND_SCHED:-20000}" MINITIR_FUZZ_CASES
run gpu_fuzz "$t/test_gpu_fuzz" "${MINITIR_FUZZ_ROUND_GPU:-5000}" MINITIR_GPU_FUZZ_CASES
run parser_fuzz "$t/test_parser_fuzz" "${MINITIR_FUZZ_ROUND_PARSER:-20000}" MINITIR_FUZZ_CASES
exit $status
