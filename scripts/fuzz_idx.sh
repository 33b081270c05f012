#!/usr/bin/env bash
# Fuzzes the Fashion-MNIST IDX reader (examples/train_fashion/idx.h) over bytes as a file holds
# them, gzip or plain (fuzz/idx; target fuzz_idx_parse).
#
#   scripts/fuzz_idx.sh            # 60 s
#   scripts/fuzz_idx.sh 600        # 10 min
#   scripts/fuzz_idx.sh --ci       # 25 s from a fixed seed (CI); non-zero on a finding
#   scripts/fuzz_idx.sh --merge    # 60 s, then new inputs minimised into fuzz/idx/corpus
#
# Build, corpora and crashes: scripts/fuzz_project.bash. The seed corpus is written by
# fuzz/idx/make_corpus.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fuzz_project.bash"
fuzz_project idx "${1:-}" parse
