#!/usr/bin/env bash
# Fuzzes the ir layer's text and binary program loaders, followed by the verifier and the
# round-trip invariants (fuzz/ir; targets fuzz_ir_text, fuzz_ir_binary).
#
#   scripts/fuzz_ir.sh            # 60 s per target
#   scripts/fuzz_ir.sh 600        # 10 min per target
#   scripts/fuzz_ir.sh --ci       # 25 s per target from a fixed seed (CI); non-zero on a finding
#   scripts/fuzz_ir.sh --merge    # 60 s per target, then new inputs minimised into fuzz/ir/corpus
#
# Build, corpora and crashes: scripts/fuzz_project.bash.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fuzz_project.bash"
fuzz_project ir "${1:-}" text binary
