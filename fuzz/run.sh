#!/usr/bin/env bash
# fuzz/run.sh — runs libFuzzer targets one after another for a bounded time each, quietly: the full output of a
# target goes to BUILD/fuzz-work/logs/<target>.log, the terminal gets one line per target (executions, coverage
# cov/ft as libFuzzer counts them, result) and, for a crash, the sanitizer's report line and the reproducer.
# The corpus grows in BUILD/fuzz-work/corpus/<target>; the committed seeds fuzz/corpus/<target> are only read.
# Every run is appended to BUILD/fuzz-work/history.tsv (the executions add up across runs).
#
#   fuzz/run.sh [--expect-crash] BUILD_DIR SECONDS TARGET...
# Exit status: 1 when a target crashed (or, with --expect-crash, when one did not: the plant check), else 0.
# Environment: FUZZ_FLAGS (more libFuzzer flags), FUZZ_TIMEOUT (seconds per input, 20), FUZZ_MAX_LEN (1024),
# FUZZ_WORK (the corpus/log/artifact folder instead of BUILD_DIR/fuzz-work).
set -u
expect_crash=0
if [ "${1:-}" = "--expect-crash" ]; then
  expect_crash=1
  shift
fi
if [ $# -lt 3 ]; then
  echo "usage: $0 [--expect-crash] BUILD_DIR SECONDS TARGET..." >&2
  exit 2
fi
build=$(cd "$1" && pwd)
secs=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
work=${FUZZ_WORK:-$build/fuzz-work}
mkdir -p "$work/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The targets run 1-3 pool threads on machines with as few as 2 cores: spinning OpenMP workers (libomp's default
# waits 200 ms before sleeping) would take the cores from the calling thread between the small calls.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

status=0
for t in "$@"; do
  bin=$build/fuzz/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is missing (build with TXOPS_BUILD_FUZZERS=ON)" >&2
    status=1
    continue
  fi
  corpus=$work/corpus/$t
  art=$work/artifacts/$t
  log=$work/logs/$t.log
  mkdir -p "$corpus" "$art"
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$bin" -max_total_time="$secs" -print_final_stats=1 -timeout="${FUZZ_TIMEOUT:-20}" -max_len="${FUZZ_MAX_LEN:-1024}" \
    -rss_limit_mb=2048 -artifact_prefix="$art/" ${FUZZ_FLAGS:-} "$corpus" "$root/fuzz/corpus/$t" > "$log" 2>&1
  rc=$?
  wall=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  # -fork=N prints no final stats: the parent's last "#N: cov: ..." line counts the executions of all jobs
  [ -z "$execs" ] && execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  cov=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]*' | tail -1 | awk '{print $2}')
  ft=$(grep -E '^#[0-9]+' "$log" | grep -o 'ft: [0-9]*' | tail -1 | awk '{print $2}')
  crashed=0
  [ $rc -ne 0 ] && crashed=1
  if [ $crashed -eq 0 ]; then
    result=ok
  else
    what=$(grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|txfuzz: contract' "$log" |
           sed -e 's/^==[0-9]*==//' | cut -c1-200)
    repro=$(grep -m1 -o "Test unit written to .*" "$log" | sed 's/Test unit written to //')
    result="CRASH: ${what:-exit $rc}${repro:+ (reproduce: $bin $repro)}"
  fi
  printf '%-34s execs %9s  cov %5s  ft %6s  %4ss  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$wall" "$result"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "${execs:-0}" "${cov:-0}" "${ft:-0}" "$wall" \
    "$([ $crashed -eq 0 ] && echo ok || echo crash)" >> "$work/history.tsv"
  if [ $expect_crash -eq 1 ]; then
    [ $crashed -eq 0 ] && status=1
  else
    [ $crashed -eq 1 ] && status=1
  fi
done
if [ $expect_crash -eq 1 ] && [ $status -ne 0 ]; then
  echo "fuzz: expected a crash, none was found" >&2
fi
exit $status
