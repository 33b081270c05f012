#!/usr/bin/env bash
# Builds the .npy reader's libFuzzer target with clang-14 (ASan + UBSan) and runs it briefly.
#
#   scripts/fuzz_npy.sh              # build, then fuzz for ${FUZZ_SECONDS:-30} seconds
#   FUZZ_SECONDS=600 scripts/fuzz_npy.sh
#   scripts/fuzz_npy.sh --merge      # afterwards, minimise the new findings into fuzz/tensor/corpus
#
# New inputs go to build/tensor-fuzz/corpus (the checked-in corpus fuzz/tensor/corpus is only
# read, unless --merge). A crash leaves crash-* in build/tensor-fuzz and a non-zero exit status.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${root}/build/tensor-fuzz"
seconds="${FUZZ_SECONDS:-30}"
jobs="${FUZZ_BUILD_JOBS:-2}"

cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCHANFLOW_SANITIZE="address,undefined,fuzzer-no-link" \
  -DCHANFLOW_BUILD_TESTS=OFF -DCHANFLOW_BUILD_BENCH=OFF -DCHANFLOW_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "${build}" -j "${jobs}" --target chanflow_tensor

clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DCHANFLOW_STATIC -I"${root}/include" -I"${build}/include" \
  "${root}/fuzz/tensor/npy_fuzzer.cc" \
  "${build}/src/tensor/libchanflow_tensor.a" "${build}/src/core/libchanflow_core.a" \
  -lopenblas -lfmt -lpthread -o "${build}/npy_fuzzer"

mkdir -p "${build}/corpus"
cd "${build}"
./npy_fuzzer -max_total_time="${seconds}" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -dict="${root}/fuzz/tensor/npy.dict" -print_final_stats=1 \
  "${build}/corpus" "${root}/fuzz/tensor/corpus"

if [[ "${1:-}" == "--merge" ]]; then
  ./npy_fuzzer -merge=1 "${root}/fuzz/tensor/corpus" "${build}/corpus"
fi
