#!/usr/bin/env bash
# Fuzzes the trace's renderer over bytes as a recording's buffers and spool hold them (fuzz/trace;
# target fuzz_trace_render).
#
#   scripts/fuzz_trace.sh            # 60 s
#   scripts/fuzz_trace.sh 600        # 10 min
#   scripts/fuzz_trace.sh --ci       # 25 s from a fixed seed (CI); non-zero on a finding
#   scripts/fuzz_trace.sh --merge    # 60 s, then new inputs minimised into fuzz/trace/corpus
#
# Build, corpora and crashes: scripts/fuzz_project.bash.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fuzz_project.bash"
fuzz_project trace "${1:-}" render
