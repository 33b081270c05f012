# fuzz_project.bash — sourced by the fuzz scripts whose targets live in a standalone CMake project
# under fuzz/<layer>/ (scripts/fuzz_ir.sh, scripts/fuzz_trace.sh). Not a fuzz script itself: CI
# runs scripts/fuzz_*.sh.
#
# fuzz_project <layer> <arg> <target>...: builds fuzz/<layer>'s libFuzzer targets
# fuzz_<layer>_<target> (clang-14, -fsanitize=fuzzer,address,undefined) in build/fuzz-<layer> and
# runs each over the checked-in corpus fuzz/<layer>/corpus/<target>. <arg> is the calling
# script's first argument:
#   ""        60 s per target
#   <seconds> that long per target
#   --ci      25 s per target from a fixed seed (a CI verdict must be reproducible; random
#             exploration is for local runs)
#   --merge   60 s per target, then the new inputs minimised into the checked-in corpus
# New inputs libFuzzer finds go to build/fuzz-<layer>/corpus-<target> (not the repo); crashes to
# build/fuzz-<layer>/crash-<target>-*. Returns non-zero on a finding.
fuzz_project() {
  local layer="$1" arg="$2"
  shift 2
  local root build seconds=60 merge=0 jobs="${JOBS:-2}" seed_flag=()
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  build="${root}/build/fuzz-${layer}"
  case "${arg}" in
    "") ;;
    --ci) seconds=25; seed_flag=(-seed=1) ;;
    --merge) merge=1 ;;
    *) seconds="${arg}" ;;
  esac

  # clang-14 and its libFuzzer/sanitizer runtimes (libclang-rt-14-dev) are in bootstrap's --dev set.
  "${root}/scripts/bootstrap.sh" --dev
  local tool
  for tool in clang-14 clang++-14; do
    command -v "$tool" >/dev/null || { echo "fuzz_${layer}: $tool not found (scripts/bootstrap.sh --dev installs it)" >&2; return 2; }
  done

  local san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
  local exes=()
  local target
  for target in "$@"; do exes+=("fuzz_${layer}_${target}"); done
  cmake -S "${root}/fuzz/${layer}" -B "${build}" -G Ninja \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="${san}" -DCMAKE_CXX_FLAGS="${san}" >/dev/null
  cmake --build "${build}" -j "${jobs}" --target "${exes[@]}"

  local status=0 work log
  for target in "$@"; do
    work="${build}/corpus-${target}"
    log="${build}/fuzz_${layer}_${target}.log"
    mkdir -p "${work}"
    echo "== fuzz_${layer}_${target}: ${seconds}s over fuzz/${layer}/corpus/${target} ${seed_flag[*]:-}"
    if ! ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
        "${build}/fuzz_${layer}_${target}" \
        -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="${build}/crash-${target}-" "${seed_flag[@]}" \
        "${work}" "${root}/fuzz/${layer}/corpus/${target}" 2>"${log}"; then
      echo "fuzz_${layer}_${target}: FINDING (see ${log} and crash-${target}-*)" >&2
      tail -n 60 "${log}" >&2
      status=1
      continue
    fi
    grep -E "stat::number_of_executed_units|stat::new_units_added" "${log}" || true
    if [[ "${merge}" == 1 ]]; then
      "${build}/fuzz_${layer}_${target}" -merge=1 "${root}/fuzz/${layer}/corpus/${target}" "${work}" \
        2>>"${log}"
    fi
  done
  return "${status}"
}
