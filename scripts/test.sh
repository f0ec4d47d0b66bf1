#!/usr/bin/env bash
# Runs minitir's whole test suite: installs missing dependencies, builds
# with -Werror, runs every suite once normally and once under
# AddressSanitizer + UndefinedBehaviorSanitizer, and prints one final line
# "N passed, N failed, N skipped" counting individual test cases.
# GPU tests report "skipped" on machines without a CUDA GPU.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh || { echo "bootstrap failed"; echo "0 passed, 1 failed"; exit 1; }

jobs=$(nproc 2>/dev/null || echo 2)
status=0
logs=()
run_build() { # name, meson options...
    local dir=$1; shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" -Dwerror=true "$@" >"$dir.setup.log" 2>&1 ||
            { cat "$dir.setup.log"; return 1; }
    fi
    ninja -C "$dir" -j"$jobs" >"$dir.build.log" 2>&1 || { tail -50 "$dir.build.log"; return 1; }
    meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "$jobs" "${MESON_TEST_ARGS[@]}" || true
    logs+=("$dir/meson-logs/testlog.json")
}

MESON_TEST_ARGS=()
[ "${MINITIR_TEST_SUITE:-}" != "" ] && MESON_TEST_ARGS+=(--suite "$MINITIR_TEST_SUITE")

echo "== normal build =="
run_build build || status=1
echo "== ASan + UBSan build =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug ||
    status=1

python3 scripts/count_tests.py "${logs[@]}"
rc=$?
[ $status -ne 0 ] && rc=1
exit $rc
