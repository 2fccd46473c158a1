// fuzz_rope_with_sin_cos_cache.cpp — aclnnRopeWithSinCosCache and V2: positions (T,) or (m, T) int64 / int32 with
// values inside the cache or one outside (negative, maxPos, huge), query / key (T, N * headSize) with headSize and
// rotaryDim valid or not, mropeSection (mutated aclIntArray: null, wrong length, wild values), cacheMode 0, 1 or
// invalid, NeoX or GPT-J; outputs separate, the inputs themselves or over another tensor's memory.
#include "aclnnop/aclnn_rope_with_sin_cos_cache.h"
#include "aclnnop/aclnn_rope_with_sin_cos_cache_v2.h"
#include "fuzz_util.h"

TXFUZZ_TARGET(rope_with_sin_cos_cache) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  const bool v2 = s.flag("op", "v2");
  static const int64_t kHead[] = {64, 32, 16, 128, 8, 18, 0, 7};
  int64_t T = 1 + s.range(0, 15, "shape", "T"), Nq = 1 + s.range(0, 5, "shape", "Nq");
  int64_t Nk = s.range(0, 3, "shape", "Nk");
  const int64_t head = s.pick(kHead, "shape", "head");
  const int64_t rotary = head > 0 ? head - 2 * s.range(0, head / 2, "shape", "pass") : 2 + s.range(0, 4, "shape", "rd");
  const int64_t max_pos = 1 + s.range(0, 40, "shape", "max_pos");
  fit_budget({&T, &Nq}, kMaxElements / (head > 0 ? head : 1));
  const bool mrope = s.flag("attr", "mrope");
  std::vector<int64_t> section;
  if (mrope) {
    const int64_t parts = 3 + s.range(0, 1, "attr", "four");
    int64_t left = rotary / 2;
    for (int64_t p = 0; p + 1 < parts; ++p) {
      const int64_t take = s.range(0, left, "sec", "take");
      section.push_back(take);
      left -= take;
    }
    section.push_back(left);
  }
  const int64_t rows = mrope ? static_cast<int64_t>(section.size()) : 1;
  std::vector<int64_t> pos(static_cast<size_t>(rows * T));
  for (auto& p : pos) p = s.range(0, max_pos - 1, "posv", "p");
  if (s.flag("posv", "break")) {
    static const int64_t kBad[] = {-1, 0, INT32_MAX, INT64_MIN, int64_t{1} << 40};
    const int64_t bad = s.pick(kBad, "posv", "bad");
    pos[s.range(0, static_cast<int64_t>(pos.size()) - 1, "posv", "at")] = bad == 0 ? max_pos : bad;
  }
  const aclDataType pdt = s.flag("dtype", "pos_i32") ? ACL_INT32 : ACL_INT64;
  const aclDataType xdt = float_dtype(s, "dtype", "x");
  const aclDataType cdt = s.flag("dtype", "cache_f32") ? ACL_FLOAT : xdt;
  aclTensor* positions =
      s.tensor("pos", mrope ? std::vector<int64_t>{rows, T} : std::vector<int64_t>{T}, pdt, &pos);
  aclTensor* q = s.tensor("q", {T, Nq * head}, xdt);
  aclTensor* k = s.tensor("k", {T, Nk * head}, xdt);
  aclTensor* cache = s.tensor("cache", {max_pos, rotary}, cdt);
  aclIntArray* sec = mrope ? s.int_array("section", section) : nullptr;
  const int64_t qo_kind = s.range(0, 3, "qo", "alias"), ko_kind = s.range(0, 3, "ko", "alias");
  aclTensor* qo = qo_kind == 0 ? s.tensor("qo", {T, Nq * head}, xdt) : s.alias("qo", q, qo_kind - 1);
  aclTensor* ko = ko_kind == 0 ? s.tensor("ko", {T, Nk * head}, xdt) : s.alias("ko", k, ko_kind - 1);
  const bool neox = s.flag("attr", "gptj") ? false : true;
  static const int64_t kModes[] = {0, 1, 2, -1};
  const int64_t cache_mode = s.pick(kModes, "attr", "cache_mode");
  if (v2) {
    s.two_phases(
        "aclnnRopeWithSinCosCacheV2",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnRopeWithSinCosCacheV2GetWorkspaceSize(positions, q, k, cache, sec, head, neox, cache_mode, qo,
                                                            ko, ws, ex);
        },
        [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnRopeWithSinCosCacheV2(w, n, ex, st); });
  } else {
    s.two_phases(
        "aclnnRopeWithSinCosCache",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnRopeWithSinCosCacheGetWorkspaceSize(positions, q, k, cache, sec, head, neox, qo, ko, ws, ex);
        },
        [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnRopeWithSinCosCache(w, n, ex, st); });
  }
}
