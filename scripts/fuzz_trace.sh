#!/usr/bin/env bash
# Builds the trace renderer's libFuzzer target (clang-14, -fsanitize=fuzzer,address,undefined) in
# build/fuzz-trace and runs it over the checked-in corpus fuzz/trace/corpus.
#
#   scripts/fuzz_trace.sh            # 60 s
#   scripts/fuzz_trace.sh 600        # 10 min
#   scripts/fuzz_trace.sh --ci       # 25 s from a fixed seed (CI); non-zero on a finding
#   scripts/fuzz_trace.sh --merge    # 60 s, then minimise the new inputs into fuzz/trace/corpus
#
# New inputs go to build/fuzz-trace/corpus (the checked-in corpus is only read, unless --merge);
# a crash leaves build/fuzz-trace/crash-* and a non-zero exit status.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ROOT}/build/fuzz-trace"
SECONDS_TOTAL=60
SEED_FLAG=()
MERGE=0
if [[ "${1:-}" == "--ci" ]]; then
  SECONDS_TOTAL=25
  SEED_FLAG=(-seed=1)  # a CI verdict must be reproducible; random exploration is for local runs
elif [[ "${1:-}" == "--merge" ]]; then
  MERGE=1
elif [[ -n "${1:-}" ]]; then
  SECONDS_TOTAL="$1"
fi
JOBS="${JOBS:-2}"

# clang-14 and its libFuzzer/sanitizer runtimes (libclang-rt-14-dev) are in bootstrap's --dev set.
"$(dirname "$0")/bootstrap.sh" --dev
for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz_trace.sh: $tool not found (scripts/bootstrap.sh --dev installs it)" >&2; exit 2; }
done

SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
cmake -S "${ROOT}/fuzz/trace" -B "${BUILD}" -G Ninja \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="${SAN}" -DCMAKE_CXX_FLAGS="${SAN}" >/dev/null
cmake --build "${BUILD}" -j "${JOBS}" --target fuzz_trace_render

work="${BUILD}/corpus"
log="${BUILD}/fuzz_trace_render.log"
mkdir -p "${work}"
echo "== fuzz_trace_render: ${SECONDS_TOTAL}s over fuzz/trace/corpus ${SEED_FLAG[*]:-}"
# 64 KiB: the renderer reads one buffer of a recording at a time.
if ! ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
    "${BUILD}/fuzz_trace_render" \
    -max_total_time="${SECONDS_TOTAL}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="${BUILD}/crash-" "${SEED_FLAG[@]}" \
    "${work}" "${ROOT}/fuzz/trace/corpus" 2>"${log}"; then
  echo "fuzz_trace_render: FINDING (see ${log} and ${BUILD}/crash-*)" >&2
  tail -n 60 "${log}" >&2
  exit 1
fi
grep -E "stat::number_of_executed_units|stat::new_units_added" "${log}" || true

if [[ "${MERGE}" == 1 ]]; then
  "${BUILD}/fuzz_trace_render" -merge=1 "${ROOT}/fuzz/trace/corpus" "${work}" 2>>"${log}"
fi
