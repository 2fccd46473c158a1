#!/usr/bin/env bash
# check_install.sh BUILD_DIR SOURCE_DIR — installs txops from BUILD_DIR into a temporary prefix, builds the
# consumer project in tests/install against it with find_package(txops), runs the CANN-style sample and checks
# every printed result against an fp64 evaluation of InterleaveRope (rounded once to fp16: tolerance 2^-10 rel).
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/acl/acl.h"
test -f "$work/prefix/include/aclnnop/aclnn_interleave_rope.h"
cmake -S "$src/tests/install" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log"
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/interleave_rope_sample" > "$work/out.txt"
awk '
  /^x\[/      { split($0, a, /[][]/); x[a[2]] = $NF }
  /^cos\[/    { split($0, a, /[][]/); c[a[2]] = $NF }
  /^sin\[/    { split($0, a, /[][]/); s[a[2]] = $NF }
  /^result\[/ { split($0, a, /[][]/); r[a[2]] = $NF; n++ }
  END {
    B = 1; N = 2; S = 3; D = 64; H = D / 2; bad = 0
    for (b = 0; b < B; b++) for (h = 0; h < N; h++) for (t = 0; t < S; t++) for (i = 0; i < H; i++) {
      row = ((b * N + h) * S + t) * D; crow = t * D
      e = x[row + 2*i]; o = x[row + 2*i + 1]
      want1 = e * c[crow + i] - o * s[crow + i]
      want2 = o * c[crow + H + i] + e * s[crow + H + i]
      got1 = r[row + i]; got2 = r[row + H + i]
      tol1 = 1e-6 + 2^-10 * (want1 < 0 ? -want1 : want1); d1 = got1 - want1; if (d1 < 0) d1 = -d1
      tol2 = 1e-6 + 2^-10 * (want2 < 0 ? -want2 : want2); d2 = got2 - want2; if (d2 < 0) d2 = -d2
      if (d1 > tol1 || d2 > tol2) { bad++; if (bad < 5) printf("mismatch row %d i %d: %g vs %g, %g vs %g\n", row, i, got1, want1, got2, want2) }
    }
    if (n != B * N * S * D) { printf("expected %d results, got %d\n", B * N * S * D, n); exit 1 }
    if (bad) { printf("%d mismatches\n", bad); exit 1 }
    printf("install + CANN-style sample: %d results match the fp64 InterleaveRope\n", n)
  }' "$work/out.txt"
