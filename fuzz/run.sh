#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each from its seed corpus plus the corpus
# earlier runs grew, and prints one line per target and a summary. Any crash, sanitizer report,
# leak or timeout fails the run; the input that caused it is kept in build/fuzz/findings/.
# Expects the fuzz preset built (scripts/build fuzz) and the seeds written
# (fuzz/seed_corpus.py build/fuzz/seeds ...); scripts/test --fuzz and bench/fuzz.sh do both.
#
#   fuzz/run.sh SECONDS [TARGET...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
shift
BIN="$ROOT/build/fuzz/fuzz"
OUT="$ROOT/build/fuzz"
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  targets=(fuzz_http_request fuzz_json_infer fuzz_binary_tensor fuzz_model_config
    fuzz_load_override fuzz_grpc_infer fuzz_settings fuzz_http_framing fuzz_shm fuzz_log_settings
    fuzz_trace_settings fuzz_cache_value fuzz_json_generate fuzz_python_stub fuzz_perf_replies
    fuzz_python_metric)
fi
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
mkdir -p "$OUT/findings" "$OUT/logs"
failed=0
total=0
for t in "${targets[@]}"; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus" "$OUT/seeds/$t"
  log="$OUT/logs/$t.log"
  rc=0
  # -timeout: one input may take at most 30 s (the HTTP target waits up to 20 s for the server
  # to close); -rss_limit_mb: the server's own limits keep far below this.
  "$BIN/$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$OUT/findings/$t-" "$corpus" "$OUT/seeds/$t" >"$log" 2>&1 || rc=$?
  # A target that dies before its first report has no "cov:" line: grep's status must not end the
  # script (set -e, pipefail) before the FAIL line and the summary are printed.
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)"
  total=$((total + ${execs:-0}))
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    echo "FAIL $t after ${execs:-?} executions (exit $rc); log: $log"
    grep -E "ERROR|SUMMARY|runtime error|Test unit written|^fuzz_" "$log" | head -8 | sed 's/^/    /' || true
  else
    echo "ok   $t: ${execs:-0} executions in ${secs} s, coverage ${cov:-?}, corpus $(ls "$corpus" | wc -l)"
  fi
done
echo "fuzz: ${#targets[@]} targets, $total executions, $failed failed"
[ "$failed" -eq 0 ]
