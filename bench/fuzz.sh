#!/usr/bin/env bash
# Longer fuzzing runs than CI's 30 s per target: builds the fuzz preset (clang, ASan+UBSan,
# libFuzzer), writes the seed corpora and runs every target (or those named) for MINUTES each.
# The corpus each run grows stays in build/fuzz/corpus/ and seeds the next run. Record what a
# run found (and how long it ran) in docs/fuzzing.md.
#
#   bench/fuzz.sh MINUTES [TARGET...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
minutes="${1:?usage: bench/fuzz.sh MINUTES [TARGET...]}"
shift
scripts/setup
scripts/build fuzz
models="$ROOT/build/fuzz/test_models"
/usr/bin/python3 scripts/gen_test_models.py --examples "$models/examples" --fixtures "$models/fixtures" >/dev/null
/usr/bin/python3 fuzz/seed_corpus.py build/fuzz/seeds "$models" >/dev/null
fuzz/run.sh "$((minutes * 60))" "$@"
