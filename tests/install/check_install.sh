#!/usr/bin/env bash
# Proves the install works: installs the build tree into a scratch prefix, then builds and runs a
# consumer project against it twice — with find_package(chanflow CONFIG) and with pkg-config.
# Usage: check_install.sh <chanflow build dir> <consumer source dir> <c++ compiler>
set -euo pipefail
build_dir=$1
consumer_src=$2
cxx=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null

echo "== find_package(chanflow CONFIG)"
cmake -S "$consumer_src" -B "$scratch/cmake-build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/cmake-build" >/dev/null
"$scratch/cmake-build/consumer"

echo "== pkg-config chanflow"
export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
"$cxx" -o "$scratch/pc-consumer" "$consumer_src/main.cc" $(pkg-config --cflags --libs chanflow)
"$scratch/pc-consumer"
