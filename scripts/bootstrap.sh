#!/usr/bin/env bash
# Installs what minitir needs to build and test on Debian 12 (bookworm):
# LLVM 19 (C API, static libraries), Meson + ninja, cmocka, pkg-config, zlib
# and zstd (LLVM's static libraries need them), SQLite (the tuning
# database), libxgboost (the tuner's optional XGBoost cost model, loaded at
# run time; its tests skip without it) and gnuplot for the benchmark chart.  Installs only what is missing; uses sudo when not root.
set -euo pipefail

pkgs=(build-essential pkg-config meson ninja-build llvm-19-dev libcmocka-dev
      zlib1g-dev libzstd-dev libsqlite3-dev libxgboost-dev python3 gnuplot-nox)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
