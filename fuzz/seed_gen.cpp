// seed_gen.cpp — writes the seed inputs of every target: each seed is a script of decisions ("scope.label" ->
// values; unnamed decisions take their default, the low end of their range), run through the target's own body
// with an Input that records the bytes FuzzedDataProvider decodes back into the same values (integers are read
// from the end of the input, most significant byte first, as many bytes as the range needs). Each seed is then
// decoded again with FuzzedDataProvider to check the round trip, and its phase-one status is printed.
//   fuzz_seed_gen OUT_DIR [TARGET...]   writes OUT_DIR/<target>/seed_<name>
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_util.h"

#define TXFUZZ_DECLARE(name) void txfuzz_body_##name(txfuzz::Input& in);
TXFUZZ_DECLARE(interleave_rope)
TXFUZZ_DECLARE(inplace_partial_rotary_mul)
TXFUZZ_DECLARE(inplace_partial_rotary_mul_grad)
TXFUZZ_DECLARE(apply_rotary_pos_emb_v2)
TXFUZZ_DECLARE(apply_rotary_pos_emb_grad)
TXFUZZ_DECLARE(chunk_gated_delta_rule)
TXFUZZ_DECLARE(recurrent_gated_delta_rule)
TXFUZZ_DECLARE(causal_conv1d)
TXFUZZ_DECLARE(rotary_position_embedding)
TXFUZZ_DECLARE(rope_with_sin_cos_cache)
TXFUZZ_DECLARE(runtime)

namespace {

using Script = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// Records the decisions of a script as FuzzedDataProvider input bytes.
class EncodeInput final : public txfuzz::Input {
 public:
  explicit EncodeInput(const Script& script) {
    for (const auto& kv : script) script_[kv.first] = kv.second;
  }
  int64_t range(int64_t lo, int64_t hi, const char* scope, const char* label) override {
    const std::string key = scope ? std::string(scope) + "." + label : std::string(label);
    int64_t v = lo;
    auto it = script_.find(key);
    if (it != script_.end() && !it->second.empty()) {
      size_t& k = used_[key];
      v = it->second[k < it->second.size() ? k : it->second.size() - 1];
      ++k;
    }
    if (v < lo || v > hi) {
      std::fprintf(stderr, "seed_gen: %s = %lld is outside [%lld, %lld]; clamped\n", key.c_str(), (long long)v,
                   (long long)lo, (long long)hi);
      v = v < lo ? lo : hi;
    }
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const uint64_t r = static_cast<uint64_t>(v) - static_cast<uint64_t>(lo);
    int n = 0;
    while (n < 8 && (span >> (8 * n)) > 0) ++n;
    for (int i = n - 1; i >= 0; --i) consumed_.push_back(static_cast<uint8_t>(r >> (8 * i)));
    values_.push_back(v);
    return v;
  }
  // FuzzedDataProvider takes integers from the end: the first byte consumed is the last byte of the input. The
  // last decisions' bytes come first; when they are zero they can go (an exhausted input decodes as `lo`).
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out(consumed_.rbegin(), consumed_.rend());
    size_t lead = 0;
    while (lead < out.size() && out[lead] == 0) ++lead;
    return std::vector<uint8_t>(out.begin() + lead, out.end());
  }
  const std::vector<int64_t>& values() const { return values_; }
  std::vector<std::string> unused() const {
    std::vector<std::string> keys;
    for (const auto& kv : script_)
      if (used_.count(kv.first) == 0) keys.push_back(kv.first);
    return keys;
  }

 private:
  std::map<std::string, std::vector<int64_t>> script_;
  std::map<std::string, size_t> used_;
  std::vector<uint8_t> consumed_;
  std::vector<int64_t> values_;
};

class DecodeInput final : public txfuzz::Input {
 public:
  DecodeInput(const uint8_t* data, size_t size) : fdp_(data, size) {}
  int64_t range(int64_t lo, int64_t hi, const char*, const char*) override {
    values_.push_back(fdp_.ConsumeIntegralInRange<int64_t>(lo, hi));
    return values_.back();
  }
  const std::vector<int64_t>& values() const { return values_; }

 private:
  FuzzedDataProvider fdp_;
  std::vector<int64_t> values_;
};

struct Seed {
  const char* name;
  Script script;
};

struct Target {
  const char* name;
  void (*body)(txfuzz::Input&);
  std::vector<Seed> seeds;
};

std::vector<Seed> partial_seeds(const char* x);

// Indices into the targets' pick() tables are noted where a script uses them.
std::vector<Target> targets() {
  return {
      {"interleave_rope", txfuzz_body_interleave_rope,
       {
           {"f32_64", {}},  // B = N = S = 1, D = 64, fp32: the empty input
           {"bf16_cosf32_bcast", {{"shape.B", {1}}, {"shape.N", {3}}, {"shape.S", {7}}, {"dtype.x", {2}},
                                  {"dtype.cos_f32", {1}}, {"shape.cos_B1", {1}}}},
           {"f16_inplace_d128", {{"shape.N", {7}}, {"shape.S", {15}}, {"shape.D", {6}}, {"dtype.x", {1}},
                                 {"out.alias", {1}}, {"cfg.threads", {1}}}},
           {"scalar_padded", {{"cfg.isa", {2}}, {"shape.S", {4}}, {"shape.D", {5}}, {"x.mut", {3}},
                              {"x.layout", {0}}, {"x.pad", {5}}, {"out.alias", {2}}}},
           {"cann_bf16", {{"cfg.compat", {1}}, {"dtype.x", {2}}, {"shape.B", {1}}, {"shape.S", {2}}}},
           {"twice_stream", {{"shape.D", {2}}, {"shape.S", {3}}, {"call.mode", {6}}}},
           {"odd_d", {{"shape.D", {11}}}},
       }},
      {"inplace_partial_rotary_mul", txfuzz_body_inplace_partial_rotary_mul, partial_seeds("x")},
      {"inplace_partial_rotary_mul_grad", txfuzz_body_inplace_partial_rotary_mul_grad, partial_seeds("dy")},
      {"apply_rotary_pos_emb_v2", txfuzz_body_apply_rotary_pos_emb_v2,
       {
           {"bsnd_half", {{"shape.S", {3}}, {"shape.Nq", {3}}, {"shape.Nk", {1}}}},
           {"sbnd_interleave_bf16", {{"attr.layout", {1}}, {"attr.mode", {1}}, {"shape.B", {1}}, {"shape.S", {4}},
                                     {"shape.Nq", {7}}, {"dtype.q", {2}}, {"dtype.cos_f32", {1}}}},
           {"bnsd_quarter_narrow", {{"attr.layout", {2}}, {"attr.mode", {2}}, {"shape.D", {1}},
                                    {"shape.cos_D_less", {16}}, {"shape.S", {5}}, {"shape.cos_B1", {1}}}},
           {"tnd_f16", {{"attr.layout", {3}}, {"shape.B", {2}}, {"shape.S", {6}}, {"shape.Nq", {1}},
                        {"dtype.q", {1}}, {"cfg.threads", {1}}}},
           {"scalar_strided_k", {{"cfg.isa", {2}}, {"shape.D", {7}}, {"k.mut", {3}}, {"k.layout", {0}},
                                 {"k.pad", {3}}}},
           {"bad_layout", {{"attr.layout", {4}}}},
       }},
      {"apply_rotary_pos_emb_grad", txfuzz_body_apply_rotary_pos_emb_grad,
       {
           {"with_cos_grad", {{"shape.S", {3}}, {"shape.Nq", {3}}, {"shape.Nk", {1}}}},
           {"no_qk", {{"qk.given", {1}}, {"dcs.absent", {1}}, {"shape.B", {1}}, {"shape.S", {5}}}},
           {"inplace_bf16_sbnd", {{"attr.layout", {1}}, {"dtype.q", {2}}, {"dq.alias", {1}}, {"dk.alias", {3}},
                                  {"shape.S", {2}}, {"shape.cos_B1", {1}}}},
           {"tnd_interleave", {{"attr.layout", {3}}, {"attr.mode", {1}}, {"shape.S", {7}}, {"shape.Nq", {2}},
                               {"dtype.q", {1}}, {"dtype.cos_f32", {1}}, {"cfg.threads", {1}}}},
           {"bnsd_quarter_scalar", {{"attr.layout", {2}}, {"attr.mode", {2}}, {"cfg.isa", {2}}, {"shape.D", {2}},
                                    {"shape.S", {3}}}},
           {"cann_half", {{"cfg.compat", {1}}, {"shape.S", {1}}}},
       }},
      {"chunk_gated_delta_rule", txfuzz_body_chunk_gated_delta_rule,
       {
           {"one_token", {}},
           {"chunked_long", {{"shape.long", {1}}, {"lens.len", {99}}, {"shape.Dk", {1}}, {"shape.Dv", {1}},
                             {"cfg.kernel", {1}}}},
           {"three_seqs_bf16", {{"shape.B", {2}}, {"lens.len", {4, 0, 6}}, {"shape.Nk", {1}}, {"shape.ratio", {1}},
                                {"dtype.act", {2}}, {"dtype.state_bf16", {1}}, {"cfg.threads", {1}}}},
           {"chunk_mode", {{"shape.long", {1}}, {"shape.B", {1}}, {"lens.len", {129, 69}}, {"shape.Dk", {0}},
                           {"shape.Dv", {1}}, {"cfg.kernel", {1}}, {"cfg.split", {1}}, {"cfg.threads", {1}}}},
           {"recurrent_no_g", {{"lens.len", {5}}, {"g.absent", {1}}, {"cfg.kernel", {2}}, {"shape.Dk", {2}},
                               {"dtype.act", {1}}, {"out.alias", {0}}}},
           {"scalar_inplace_state", {{"cfg.isa", {2}}, {"lens.len", {7}}, {"s1.alias", {1}}, {"shape.Dk", {7}}}},
           {"bad_lens", {{"shape.B", {1}}, {"lens.len", {2, 3}}, {"lensv.mut", {2}}}},
           {"ex_pool_snapshots", {{"ex.use", {1}}, {"ex.extra_rows", {3}}, {"shape.long", {1}}, {"shape.B", {1}},
                                  {"lens.len", {129, 70}}, {"idxv.kind", {1}}, {"ckpt.every", {1}},
                                  {"ckpt.first", {1}}, {"ckpt.spare", {1}}, {"shape.Dk", {0}}, {"shape.Dv", {1}}}},
           {"ex_zero_starts_chunk_mode", {{"ex.use", {1}}, {"shape.long", {1}}, {"shape.B", {2}},
                                          {"lens.len", {65, 0, 128}}, {"hasv.zero", {1, 0, 1}}, {"ckpt.every", {1}},
                                          {"ckpt.bf16", {1}}, {"ckpt.spare", {1}}, {"cfg.split", {1}}, {"cfg.threads", {1}},
                                          {"s1.alias", {1}}, {"starts.absent", {1}}}},
           {"ex_bad_indices", {{"ex.use", {1}}, {"shape.B", {1}}, {"lens.len", {3, 4}}, {"idxv.kind", {2}}}},
           {"grad_two_seqs", {{"grad.use", {1}}, {"shape.B", {1}}, {"lens.len", {3, 5}}, {"shape.Nk", {1}},
                              {"shape.ratio", {1}}}},
           {"grad_long_bf16_alias", {{"grad.use", {1}}, {"shape.long", {1}}, {"lens.len", {69}}, {"shape.Dk", {1}},
                                     {"shape.Dv", {1}}, {"dtype.act", {2}}, {"dtype.state_bf16", {1}},
                                     {"ds0.alias", {1}}, {"cfg.threads", {1}}}},
           {"grad_no_g_no_dfs", {{"grad.use", {1}}, {"g.absent", {1}}, {"dfs.absent", {1}}, {"lens.len", {4}},
                                 {"shape.Dk", {7}}}},
           {"grad_dg_mismatch", {{"grad.use", {1}}, {"dg.mismatch", {1}}, {"lens.len", {2}}}},
           {"grad_snapshots", {{"grad.use", {1}}, {"grad.snapshots", {1}}, {"shape.long", {1}}, {"lens.len", {129}},
                               {"shape.Dk", {1}}, {"shape.Dv", {1}}, {"cfg.threads", {1}}, {"gckpt.spare", {1}}}},
           {"grad_snapshots_corrected", {{"grad.use", {1}}, {"grad.snapshots", {1}}, {"gcv.given", {1}},
                                         {"shape.long", {1}}, {"lens.len", {129}}, {"shape.Dk", {1}},
                                         {"shape.Dv", {1}}, {"gckpt.spare", {1}}}},
           {"ex_corrected_values", {{"ex.use", {1}}, {"shape.long", {1}}, {"lens.len", {69}}, {"ckpt.every", {1}},
                                    {"cv.given", {1}}}},
           {"grad_snapshots_bf16_two_seqs", {{"grad.use", {1}}, {"grad.snapshots", {1}}, {"shape.long", {1}},
                                             {"shape.B", {1}}, {"lens.len", {68, 63}}, {"dtype.act", {2}},
                                             {"dtype.state_bf16", {1}}, {"gckpt.spare", {2}}}},
       }},
      {"recurrent_gated_delta_rule", txfuzz_body_recurrent_gated_delta_rule,
       {
           {"one_token", {}},
           {"spec_decode", {{"shape.B", {2}}, {"lens.len", {1, 2, 0}}, {"accv.n", {1, 2, 0}}, {"shape.Dk", {2}},
                            {"shape.Dv", {2}}, {"shape.extra_slots", {3}}}},
           {"conflicts_gk", {{"shape.B", {1}}, {"lens.len", {1, 1}}, {"idxv.kind", {2}}, {"gk.present", {1}},
                             {"shape.Dk", {3}}, {"shape.Dv", {3}}, {"cfg.threads", {1}}}},
           {"bf16_pool_wide", {{"dtype.state_bf16", {1}}, {"dtype.act", {2}}, {"shape.Nk", {1}}, {"shape.ratio", {1}},
                               {"shape.B", {3}}, {"shape.Dk", {1}}, {"shape.Dv", {1}}}},
           {"long_scalar", {{"cfg.isa", {2}}, {"shape.long", {1}}, {"lens.len", {69}},
                            {"idxv.kind", {4}}, {"accv.absent", {1}}}},
           {"bad_slot", {{"shape.B", {1}}, {"lens.len", {1, 1}}, {"idxv.kind", {1}}, {"idxv.value", {1}}}},
       }},
      {"causal_conv1d", txfuzz_body_causal_conv1d,
       {
           {"fn_bf16", {{"shape.B", {1}}, {"shape.L", {4}}, {"perv.mode", {1, 0}}}},
           {"fn_varlen_null", {{"shape.varlen", {1}}, {"shape.B", {2}}, {"lens.len", {3, 6, 1}}, {"idxv.kind", {1}},
                               {"idxv.at", {1}}, {"shape.K", {1}}, {"dtype.f16", {1}}, {"idxv.rotate", {2}}}},
           {"fn_long_strided", {{"shape.long", {1}}, {"shape.L", {199}}, {"shape.dim", {1}}, {"x.mut", {3}},
                                {"x.layout", {0}}, {"states.mut", {3}}, {"cfg.threads", {1}}}},
           {"update_decode", {{"op.update", {1}}, {"shape.B", {3}}, {"shape.dim", {5}}, {"idx.absent", {1}}}},
           {"fn_two_channel_items", {{"shape.B", {1}}, {"shape.L", {6}}, {"shape.dim", {11}}, {"perv.mode", {1, 1}}}},
           {"update_spec", {{"op.update", {1}}, {"shape.spec", {1}}, {"shape.L", {3}}, {"shape.extra_state", {3}},
                            {"perv.n", {0, 1, 3}}, {"shape.B", {2}}, {"dtype.f32", {1}}}},
           {"update_varlen_spec", {{"op.update", {1}}, {"shape.spec", {1}}, {"shape.varlen", {1}}, {"shape.B", {1}},
                                   {"lens.len", {2, 3}}, {"shape.extra_state", {3}}, {"perv.n", {1, 2}}}},
           {"bad_repeat", {{"shape.B", {1}}, {"idxv.kind", {2}}}},
       }},
      {"rotary_position_embedding", txfuzz_body_rotary_position_embedding,
       {
           {"v1_half", {}},
           {"v1_broadcast_bf16", {{"shape.B", {3}}, {"shape.C", {2}}, {"cosdim.full", {0, 1, 1}}, {"dtype.x", {2}}}},
           {"v2_rotate", {{"op.which", {1}}, {"shape.D", {4}}, {"shape.B", {2}}}},
           {"grad_with_x", {{"op.which", {2}}, {"shape.B", {2}}, {"shape.A", {1}}, {"cosdim.full", {1, 0, 1}},
                            {"attr.mode", {2}}, {"cfg.threads", {1}}}},
           {"grad_placeholders", {{"op.which", {2}}, {"xopt.absent", {1}}, {"dcs.empty", {1}}, {"attr.mode", {1}}}},
           {"rank3_inplace_ihalf", {{"shape.rank3", {1}}, {"attr.mode", {3}}, {"out.alias", {1}}, {"shape.A", {3}},
                                    {"shape.B", {2}}, {"cosdim.drop", {1}}}},
           {"bad_mode", {{"attr.mode", {5}}}},
       }},
      {"rope_with_sin_cos_cache", txfuzz_body_rope_with_sin_cos_cache,
       {
           {"rope_neox", {{"shape.T", {3}}, {"shape.max_pos", {7}}, {"posv.p", {3, 0, 7, 2}}}},
           {"partial_gptj_v2", {{"op.v2", {1}}, {"shape.pass", {16}}, {"attr.gptj", {1}}, {"shape.Nk", {2}},
                                {"shape.T", {4}}, {"shape.max_pos", {9}}, {"dtype.x", {2}}}},
           {"mrope", {{"attr.mrope", {1}}, {"sec.take", {8, 12}}, {"shape.T", {2}}, {"shape.max_pos", {5}}}},
           {"mrope_interleaved", {{"op.v2", {1}}, {"attr.mrope", {1}}, {"sec.take", {10, 11}}, {"attr.cache_mode", {1}},
                                  {"shape.T", {3}}, {"shape.max_pos", {4}}}},
           {"bad_position", {{"posv.break", {1}}, {"shape.T", {2}}, {"shape.max_pos", {3}}}},
           {"in_place_i32", {{"qo.alias", {1}}, {"ko.alias", {1}}, {"dtype.pos_i32", {1}}, {"shape.T", {5}},
                             {"shape.max_pos", {3}}, {"cfg.threads", {2}}}},
       }},
      {"runtime", txfuzz_body_runtime,
       {
           // ops: 0 tensor 1 malloc 2 mallocHost 3 free 4 memcpy 5 memset 6 stream 7 context 8 init 9 intArray
           //      10 destroy 11 executor 12 misc
           {"memory", {{"rt.calls", {8}}, {"rt.op", {1, 1, 2, 4, 5, 3, 3, 3, 3}}, {"rt.size", {4095, 255, 63}},
                       {"rt.free_kind", {0, 2, 3, 1}}, {"rt.dest_max", {100}},
                       {"rt.count", {50}}, {"rt.max_count", {64}}}},
           {"tensors", {{"rt.calls", {6}}, {"rt.op", {1, 0, 0, 9, 10, 0}}, {"rt.size", {65535}}, {"rt.ndim", {4, 2, 9}},
                        {"rt.dim_kind", {1}}, {"rt.dim", {2}}, {"rt.stride_kind", {1}}, {"rt.with_strides", {0, 1}},
                        {"rt.storage_kind", {1}}, {"rt.storage", {512}}, {"rt.storage_num_kind", {1}},
                        {"rt.storage_num", {1}}, {"rt.data", {1}}, {"rt.use", {1}}, {"rt.n", {4}}}},
           {"streams_contexts", {{"rt.calls", {10}}, {"rt.op", {6, 6, 7, 7, 7, 6, 7, 8, 8, 7}},
                                 {"rt.stream", {0, 0, 2, 1}}, {"rt.ctx", {0, 2, 3, 1, 4}}, {"rt.null_out", {1}},
                                 {"rt.dev", {1}}, {"rt.init", {1, 1}}}},
           {"executors", {{"rt.calls", {4}}, {"rt.op", {11, 11, 11, 12}}, {"rt.misuse", {1, 2, 3}}}},
       }},
  };
}

std::vector<Seed> partial_seeds(const char* x) {  // x: "x" (forward) or "dy" (grad)
  const std::string X = x;
  // kD: 64 128 8 2 4 16 32 72 1024 ...; kModes: 1 0 2 3 -1 ...; slice.kind: 0 whole 1 range 2 null 3 empty
  return {
      {"interleave_whole", {}},
      {"half_range_bf16", {{"attr.rotaryMode", {1}}, {"slice.kind", {1}}, {"slice.start", {8}},
                           {"slice.units", {20}}, {"dtype.x", {2}}, {"dtype.cos_f32", {1}}, {"shape.S", {5}},
                           {"shape.N", {3}}, {"shape.cos_N1", {1}}}},
      {"quarter_f16", {{"attr.rotaryMode", {2}}, {"shape.D", {1}}, {"slice.kind", {1}}, {"slice.start", {0}},
                       {"slice.units", {16}}, {"dtype.x", {1}}, {"shape.B", {1}}, {"shape.cos_B1", {1}}}},
      {"interleave_half_null_slice", {{"attr.rotaryMode", {3}}, {"slice.kind", {2}}, {"shape.S", {9}},
                                      {"cfg.threads", {1}}}},
      {"empty_slice", {{"slice.kind", {3}}, {"slice.start", {10}}}},
      {"scalar_strided", {{"cfg.isa", {2}}, {"shape.D", {7}}, {X + ".mut", {3}}, {X + ".layout", {0}},
                          {X + ".pad", {7}}, {"shape.S", {2}}}},
      {"cann", {{"cfg.compat", {1}}, {"shape.S", {3}}}},
      {"bad_mode", {{"attr.rotaryMode", {4}}}},
  };
}

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [TARGET...]\n", argv[0]);
    return 2;
  }
  txfuzz::init_process();
  const std::string out = argv[1];
  mkdir(out.c_str(), 0755);
  int failures = 0;
  for (const Target& t : targets()) {
    bool wanted = argc == 2;
    for (int i = 2; i < argc; ++i) wanted = wanted || t.name == std::string(argv[i]);
    if (!wanted) continue;
    const std::string dir = out + "/" + t.name;
    mkdir(dir.c_str(), 0755);
    for (const Seed& s : t.seeds) {
      txfuzz::g_last_phase_one = -1;
      EncodeInput enc(s.script);
      t.body(enc);
      const aclnnStatus st = txfuzz::g_last_phase_one;
      const std::vector<uint8_t> bytes = enc.bytes();
      DecodeInput dec(bytes.data(), bytes.size());
      t.body(dec);
      bool same = dec.values() == enc.values();
      for (const std::string& k : enc.unused()) std::fprintf(stderr, "seed_gen: %s/%s: %s never asked\n", t.name, s.name, k.c_str());
      const std::string path = dir + "/seed_" + s.name;
      if (!same || !write_file(path, bytes)) {
        std::fprintf(stderr, "seed_gen: %s/%s: %s\n", t.name, s.name, same ? "cannot write" : "round trip differs");
        ++failures;
        continue;
      }
      std::printf("%-32s %-28s %4zu bytes  phase one %d%s%s\n", t.name, s.name, bytes.size(), st,
                  st > 0 ? ": " : "", st > 0 ? aclGetRecentErrMsg() : "");
    }
  }
  return failures == 0 ? 0 : 1;
}
