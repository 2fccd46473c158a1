// selfcheck.cpp — rope-ops' quick sweep (not built by CMake): every RoPE op, mode, dtype pairing, view style,
// on every ISA and 1/2 threads, against the fp64 reference (tests/support/rope_cases.h runners), plus bit
// identity across thread counts and ISAs. Build: see dev/rope/README.md.
#include <cstdio>
#include <string>
#include <vector>

#include "support/rope_cases.h"

using namespace txops;
using namespace txops::testing;

static int failures = 0, cases = 0;
template <class Case>
static void check(const Case& c) {
  std::vector<uint64_t> ref_bits;
  bool first = true;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) {
    for (int threads : {1, 2, 3}) {
      ScopedIsa si(isa);
      ScopedThreads st(threads);
      std::vector<uint64_t> bits;
      std::string err = run_case(c, &bits);
      ++cases;
      if (err.empty() && !first && bits != ref_bits) err = "bits differ from avx512/1-thread";
      if (first) { ref_bits = bits; first = false; }
      if (!err.empty()) {
        if (++failures < 40) std::printf("FAIL isa=%s threads=%d %s: %s\n", isa_name(isa), threads, c.describe().c_str(), err.c_str());
      }
    }
  }
}

int main() {
  const RotaryMode modes[] = {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter, RotaryMode::kInterleaveHalf};
  for (auto dt : dtype_pairings(false)) {
    for (int64_t D : {2, 6, 64, 72, 130}) {
      for (ViewStyle vs : all_view_styles()) {
        InterleaveRopeCase c;
        c.x_dtype = dt.first; c.cs_dtype = dt.second; c.D = D; c.x_style = vs; c.cs_style = vs;
        c.Sc = (D % 4 == 0) ? 1 : 5; c.Bc = D == 64 ? 1 : 2;
        check(c);
        c.in_place = true; check(c);
        c.in_place = false; c.out_style = vs; c.cs_stride0 = true; check(c);
      }
    }
  }
  std::printf("interleave_rope: %d cases, %d failures\n", cases, failures);
  for (auto dt : dtype_pairings(true)) {
    for (RotaryMode m : modes) {
      for (bool bwd : {false, true}) {
        for (ViewStyle vs : all_view_styles()) {
          for (auto se : std::vector<std::pair<int,int>>{{0, 64}, {8, 32}, {128, 192}, {4, 4}, {0, 40}}) {
            PartialRotaryCase c;
            c.x_dtype = dt.first; c.cs_dtype = dt.second; c.mode = m; c.backward = bwd; c.x_style = vs; c.cs_style = vs;
            c.D = se.second > 64 ? 192 : 64; c.start = se.first; c.end = se.second;
            if (m == RotaryMode::kQuarter && (c.end - c.start) % 4) continue;
            c.Bc = 2; c.Sc = 1; c.Nc = 5;
            check(c);
            c.Bc = 1; c.Sc = 3; c.Nc = 1; c.cs_stride0 = true; check(c);
          }
        }
      }
    }
  }
  std::printf("partial: %d cases, %d failures\n", cases, failures);
  for (auto dt : dtype_pairings(false)) {
    for (RotaryMode m : {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter}) {
      for (Layout l : all_layouts()) {
        for (bool bwd : {false, true}) {
          for (ViewStyle vs : all_view_styles()) {
            for (int64_t D : {8, 64, 136}) {
              ApplyRotaryCase c;
              c.q_dtype = dt.first; c.cs_dtype = dt.second; c.mode = m; c.layout = l; c.backward = bwd;
              c.q_style = vs; c.cs_style = vs; c.out_style = vs; c.D = D;
              c.cos_batch_one = D == 64;
              if (!bwd && D == 136) c.cos_dim = 72;
              check(c);
              if (bwd) { c.with_qk = false; check(c); }
            }
          }
        }
      }
    }
  }
  std::printf("total: %d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
