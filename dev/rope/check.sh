#!/bin/sh
# dev/rope/check.sh [build-dir] — rebuild, run the four RoPE test binaries and the selfcheck; exit 1 on any failure.
B=${1:-build-ropespeed}
set -e
cmake --build $B -j2 --target txops_cli rope_interleave_rope_test rope_partial_rotary_mul_test \
  rope_apply_rotary_pos_emb_test rope_adjoint_test txops_internal txops_test_support >/dev/null
for t in rope_interleave_rope_test rope_partial_rotary_mul_test rope_apply_rotary_pos_emb_test rope_adjoint_test; do
  $B/tests/$t > /tmp/ropespeed_$t.log 2>&1 || { echo "FAIL $t"; tail -20 /tmp/ropespeed_$t.log; exit 1; }
  echo "ok $t: $(grep -E 'PASSED|FAILED' /tmp/ropespeed_$t.log | tr '\n' ' ')"
done
g++ -std=gnu++17 -O1 -fopenmp -Iinclude -Isrc -Itests dev/rope/selfcheck.cpp $B/tests/libtxops_test_support.a \
  $B/libtxops_internal.a -lhwy -lgtest -lpthread -o $B/rope_selfcheck
$B/rope_selfcheck > /tmp/ropespeed_selfcheck.log 2>&1 || { echo "FAIL selfcheck"; tail -20 /tmp/ropespeed_selfcheck.log; exit 1; }
echo "ok selfcheck: $(tail -1 /tmp/ropespeed_selfcheck.log)"
