// gradab_dump.cpp — dev check (not built): writes every output of ApplyRotaryPosEmbGrad with q/k (gradQuery, gradKey,
// gradCos, gradSin) and of RotaryPositionEmbeddingGrad with x (dx, dcos, dsin; modes 0-3) over random cases (modes half/quarter/interleave, odd and even Nq/Nk, every dtype pairing,
// BSND and BNSD, 1-2 threads, AVX-512 and AVX2) to a file; link against two library builds and cmp the files to
// show a kernel change leaves the bits alone.
// g++ -std=gnu++17 -O2 -fopenmp -Iinclude -Isrc dev/rope/gradab_dump.cpp <lib>/libtxops_internal.a -lhwy -lpthread -o /tmp/gradab && /tmp/gradab out.bin
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "core/dtype.h"
#include "txops/txops.h"
using namespace txops;
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "wb");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  int fails = 0;
  auto fill = [&](std::vector<uint8_t>& v, DType t) {
    const size_t es = dtype_size(t);
    for (size_t i = 0; i < v.size() / es; ++i) {
      const float x = u(rng);
      if (t == DType::kF32) memcpy(&v[4 * i], &x, 4);
      else { uint16_t b = t == DType::kBF16 ? f32_to_bf16(x) : f32_to_f16(x); memcpy(&v[2 * i], &b, 2); }
    }
  };
  for (int it = 0; it < 120; ++it)
  for (DType xt : {DType::kBF16, DType::kF16, DType::kF32})
  for (DType ct : {DType::kBF16, DType::kF16, DType::kF32}) {
    if (ct != xt && ct != DType::kF32) continue;
    const int64_t B = 1 + it % 2, S = 2 + it % 5, Nq = 1 + it % 7, Nk = 1 + (it / 7) % 4, D = (it % 3 == 0 ? 128 : it % 3 == 1 ? 64 : 8 * (1 + it % 5));
    const RotaryMode mode = static_cast<RotaryMode>(it % 3);
    const Layout lay = it % 4 == 3 ? Layout::kBNSD : Layout::kBSND;
    const bool bsnd = lay == Layout::kBSND;
    auto tv = [&](std::vector<uint8_t>& v, DType t, int64_t n) {
      return bsnd ? TensorView(v.data(), t, {B, S, n, D}) : TensorView(v.data(), t, {B, n, S, D});
    };
    auto cv_of = [&](std::vector<uint8_t>& v) {
      return bsnd ? TensorView(v.data(), ct, {1, S, 1, D}) : TensorView(v.data(), ct, {1, 1, S, D});
    };
    const size_t ex = dtype_size(xt), ec = dtype_size(ct);
    std::vector<uint8_t> dq(B * S * Nq * D * ex), dk(B * S * Nk * D * ex), q(dq.size()), k(dk.size()), gq(dq.size()), gk(dk.size()),
        c(S * D * ec), s(c.size()), gc(c.size()), gs(c.size());
    fill(dq, xt); fill(dk, xt); fill(q, xt); fill(k, xt); fill(c, ct); fill(s, ct);
    for (Isa isa : {Isa::kAvx512, Isa::kAvx2})
    for (int th = 1; th <= 2; ++th) {
      set_max_isa(isa); set_num_threads(th);
      TensorView dqv = tv(dq, xt, Nq), dkv = tv(dk, xt, Nk), qv = tv(q, xt, Nq), kv = tv(k, xt, Nk), gqv = tv(gq, xt, Nq),
                 gkv = tv(gk, xt, Nk), cv = cv_of(c), sv = cv_of(s), gcv = cv_of(gc), gsv = cv_of(gs);
      Status st = apply_rotary_pos_emb_grad(dqv, dkv, cv, sv, &qv, &kv, mode, lay, gqv, gkv, &gcv, &gsv);
      if (!st.ok()) { ++fails; continue; }
      fwrite(gq.data(), 1, gq.size(), f); fwrite(gk.data(), 1, gk.size(), f);
      fwrite(gc.data(), 1, gc.size(), f); fwrite(gs.data(), 1, gs.size(), f);
      // RotaryPositionEmbeddingGrad with x (one side; every mode incl. interleave-half) on the q tensors
      st = rotary_position_embedding_grad(dqv, cv, sv, &qv, static_cast<RotaryMode>(it % 4), gqv, &gcv, &gsv);
      if (!st.ok()) { ++fails; continue; }
      fwrite(gq.data(), 1, gq.size(), f); fwrite(gc.data(), 1, gc.size(), f); fwrite(gs.data(), 1, gs.size(), f);
    }
  }
  fclose(f);
  printf("gradab_dump: %d failed calls\n", fails);
  return fails != 0;
}
