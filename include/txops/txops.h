// txops.h — the plain C++ API: a light strided tensor view, a status with a one-line message, and one
// function per operator. The aclnn C API (acl/acl.h, aclnnop/*.h) is a thin wrapper over these.
// Every function validates its arguments, plans and runs synchronously on the calling thread plus the
// txops thread pool; results are bit-identical for any thread count.
#ifndef TXOPS_TXOPS_H_
#define TXOPS_TXOPS_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#if defined(_WIN32)
#define TXOPS_CPP_API __declspec(dllexport)
#else
#define TXOPS_CPP_API __attribute__((visibility("default")))
#endif

namespace txops {

// Element types; the numbers are CANN's aclDataType values.
enum class DType : int32_t {
  kF32 = 0,
  kF16 = 1,
  kI8 = 2,
  kI32 = 3,
  kU8 = 4,
  kI16 = 6,
  kU16 = 7,
  kU32 = 8,
  kI64 = 9,
  kU64 = 10,
  kF64 = 11,
  kBool = 12,
  kBF16 = 27,
};
TXOPS_CPP_API size_t dtype_size(DType dtype);      // 0 for an unknown value
TXOPS_CPP_API const char* dtype_name(DType dtype);  // "fp32", "fp16", "bf16", "int32", ...

// Status codes; the numbers are CANN's aclnnStatus values.
enum class StatusCode : int32_t {
  kSuccess = 0,
  kNullptr = 161001,       // a required tensor or output pointer is null
  kParamInvalid = 161002,  // dtype / format / attribute / view outside storage (per op table)
  kRuntimeError = 361001,  // allocation or other runtime failure
  kTilingError = 561002,   // shapes breaking the op's constraints (per op table)
};

// The result of every call: a code and, on failure, one line naming the parameter, the rule and the value.
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  bool ok() const { return code_ == StatusCode::kSuccess; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kSuccess;
  std::string message_;
};

constexpr int kMaxDims = 8;

// A strided view of memory the caller owns. Shape and strides are in elements (stride 0 broadcasts).
struct TXOPS_CPP_API TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int32_t ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  TensorView() = default;
  // Contiguous (row-major) view.
  TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape);
  // Explicit strides (same length as shape).
  TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides);
  // From arrays; strides == nullptr means contiguous. ndim must be in [0, kMaxDims].
  static TensorView make(void* data, DType dtype, int32_t ndim, const int64_t* shape, const int64_t* strides);

  int64_t numel() const;
  bool is_contiguous() const;
  // True when memory is dense in the last dimension (stride 1 or size 1).
  bool last_dim_contiguous() const { return ndim == 0 || strides[ndim - 1] == 1 || shape[ndim - 1] == 1; }
  std::string shape_string() const;  // "(2, 3, 4)"
};

// ---------------------------------------------------------------------------------------------------
// Global settings (environment variables set the defaults; these calls override them at run time).
enum class Isa : int32_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
TXOPS_CPP_API const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512"
// The best ISA this CPU supports, capped by TXOPS_MAX_ISA (scalar | avx2 | avx512) or set_max_isa().
TXOPS_CPP_API Isa active_isa();
TXOPS_CPP_API void set_max_isa(Isa isa);
TXOPS_CPP_API bool cpu_has_avx512_bf16();  // vdpbf16ps usable (and allowed by the ISA cap)

// Threads used by the operators: TXOPS_NUM_THREADS, else the number of cores; set_num_threads(0) resets.
TXOPS_CPP_API int num_threads();
TXOPS_CPP_API void set_num_threads(int n);

// TXOPS_COMPAT=cann: enforce CANN's documented limits (and codes) instead of txops' wider ones.
enum class Compat : int32_t { kTxops = 0, kCann = 1 };
TXOPS_CPP_API Compat compat_mode();
TXOPS_CPP_API void set_compat_mode(Compat mode);

// TXOPS_VERBOSE=1: print one line per operator call to stderr (kernel chosen, ISA, threads, time).
TXOPS_CPP_API bool verbose();
TXOPS_CPP_API void set_verbose(bool on);

// ---------------------------------------------------------------------------------------------------
// Rotary position embedding (docs/rope.md). cos/sin are full width; all maths in fp32, one
// rounding (round-to-nearest-even) to the output dtype.
enum class RotaryMode : int32_t { kHalf = 0, kInterleave = 1, kQuarter = 2, kInterleaveHalf = 3 };
enum class Layout : int32_t { kBSND = 1, kSBND = 2, kBNSD = 3, kTND = 4 };
TXOPS_CPP_API const char* rotary_mode_name(RotaryMode mode);  // "half", "interleave", ...

// x, out (B, N, S, D); cos, sin (Bc, 1, Sc, D), Bc in {1, B}, Sc in {1, S}. out may alias x.
TXOPS_CPP_API Status interleave_rope(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                     const TensorView& out);

// In place on x (B, S, N, D): rotate the slice [slice_start, slice_end) of D. cos/sin (b, s, n, L), L = end-start,
// each of b, s, n is 1 or x's size.
TXOPS_CPP_API Status inplace_partial_rotary_mul(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                                RotaryMode mode, int64_t slice_start, int64_t slice_end);
TXOPS_CPP_API Status inplace_partial_rotary_mul_grad(const TensorView& dy, const TensorView& cos,
                                                     const TensorView& sin, RotaryMode mode, int64_t slice_start,
                                                     int64_t slice_end);

// In place on query and key (modes half / interleave / quarter). cos D may be smaller than q D: the
// first cos-D channels rotate, the rest stay untouched.
TXOPS_CPP_API Status apply_rotary_pos_emb(const TensorView& query, const TensorView& key, const TensorView& cos,
                                          const TensorView& sin, Layout layout, RotaryMode mode);

// grad_query = J^T grad_query_embed, grad_key = J^T grad_key_embed. When query and key are both given,
// grad_cos / grad_sin (cos's shape) are written too; otherwise they may be null and are left alone.
TXOPS_CPP_API Status apply_rotary_pos_emb_grad(const TensorView& grad_query_embed, const TensorView& grad_key_embed,
                                               const TensorView& cos, const TensorView& sin,
                                               const TensorView* query, const TensorView* key, RotaryMode mode,
                                               Layout layout, const TensorView& grad_query,
                                               const TensorView& grad_key, const TensorView* grad_cos,
                                               const TensorView* grad_sin);

// torch_npu.npu_rotary_mul / aclnnRotaryPositionEmbedding: out = x * cos + rot(x) * sin, every RotaryMode.
// x, out rank 3 or 4, same shape, D even <= 1024 (multiple of 4 for quarter); cos, sin (same shape, rank <= x's)
// broadcast to x right-aligned: each dim 1 or x's, last dim D. out may be x itself. With `rotate` (D, D)
// (aclnnRotaryPositionEmbeddingV2), rot(x) = x @ rotate instead; its zero entries contribute nothing.
TXOPS_CPP_API Status rotary_position_embedding(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                               RotaryMode mode, const TensorView& out,
                                               const TensorView* rotate = nullptr);

// Its backward: dx = J^T dy. With x given, dcos = sum(dy * x') and dsin = sum(dy * rot(x)) over cos's broadcast
// dims (x' = x, or cat(x[0::2], x[1::2]) for interleave-half), in cos's shape; without x, dcos / dsin may be
// null and are left alone. dx may be dy itself.
TXOPS_CPP_API Status rotary_position_embedding_grad(const TensorView& dy, const TensorView& cos,
                                                    const TensorView& sin, const TensorView* x, RotaryMode mode,
                                                    const TensorView& dx, const TensorView* dcos,
                                                    const TensorView* dsin);

// vLLM's rotary_embedding / aclnnRopeWithSinCosCache(V2): query (T, Nq * head_size), key (T, Nk * head_size);
// cos_sin_cache (max_pos, rotary_dim) rows cat(cos, sin) of rotary_dim / 2 each; positions (T,) int64 or int32,
// or (m, T) with `mrope_section` of m = 3 or 4 parts summing to rotary_dim / 2 (multimodal rope; cache_mode 1:
// the interleaved channel assignment of Qwen3-VL, 3 parts only). The first rotary_dim channels of each head
// rotate (GPT-NeoX halves when is_neox_style, else GPT-J pairs); the rest are copied. Outputs may be the inputs.
TXOPS_CPP_API Status rope_with_sin_cos_cache(const TensorView& positions, const TensorView& query,
                                             const TensorView& key, const TensorView& cos_sin_cache,
                                             const int64_t* mrope_section, int64_t mrope_section_count,
                                             int64_t head_size, bool is_neox_style, int64_t cache_mode,
                                             const TensorView& query_out, const TensorView& key_out);

// ---------------------------------------------------------------------------------------------------
// Gated delta rule (docs/gated_delta_rule.md).

// Prefill. query/key (T, Nk, Dk), value (T, Nv, Dv), beta (T, Nv), initial_state / final_state
// (B, Nv, Dv, Dk), actual_seq_lengths (B,) int32, g (T, Nv) fp32 or null, out (T, Nv, Dv).
TXOPS_CPP_API Status chunk_gated_delta_rule(const TensorView& query, const TensorView& key,
                                            const TensorView& value, const TensorView& beta,
                                            const TensorView& initial_state, const TensorView& actual_seq_lengths,
                                            const TensorView* g, float scale, const TensorView& out,
                                            const TensorView& final_state);

// Prefill for serving (a txops extension, aclnnChunkGatedDeltaRuleEx): the states in a pool by index, sequences
// that start from zero, and prefix-cache snapshots. The plain call above is this one with default options.
enum class GdrKernel : int32_t {
  kAuto = 0,       // the measured rule (docs/gated_delta_rule.md); the chunked kernel when snapshots are written
  kChunked = 1,    // always the chunked kernel: give it to a restart from a snapshot for bit-identical results
  kRecurrent = 2,  // always the token-by-token kernel (no snapshots)
};
struct GdrPrefillOptions {
  // (B,) int32. Set: initial_state and final_state are pools (P, Nv, Dv, Dk) (the same tensor for in-place use);
  // sequence b reads initial_state[state_indices[b]] and writes final_state[state_indices[b]]; indices in [0, P)
  // and distinct. Null: both are (B, Nv, Dv, Dk) and sequence b uses row b.
  const TensorView* state_indices = nullptr;
  // (B,) int32 or bool: 0 = sequence b starts from the zero state (its initial row is not read). Null: all read.
  const TensorView* has_initial_state = nullptr;
  // > 0 (a multiple of 64): the state after every checkpoint_every tokens of each sequence, written to
  // checkpoints (R, Nv, Dv, Dk) fp32 or bf16: the j-th of sequence b (j = 1 .. L_b / checkpoint_every) at row
  // checkpoint_starts[b] + j - 1. checkpoint_starts (B + 1,) int64 with increments L_b / checkpoint_every, or
  // null for the running sum from 0. A snapshot equals the fp32 state the kernel holds at that token: a restart
  // from an fp32 snapshot (as initial state, fp32 states, kChunked) gives the rest of the output and the final
  // state bit for bit.
  int64_t checkpoint_every = 0;
  const TensorView* checkpoints = nullptr;
  const TensorView* checkpoint_starts = nullptr;
  // (T, Nv, Dv) fp32 or null: the corrected values V' of every token, (I + A)^{-1} (β⊙V − β⊙e^G⊙K Sᵀ) of
  // its chunk of 64 (S the state before the chunk; fla's v_new), written by the chunked kernel (kernel auto or
  // chunked). With the fp32 snapshots every 64 tokens they are what chunk_gated_delta_rule_grad reads instead of
  // recomputing (training).
  const TensorView* corrected_values = nullptr;
  GdrKernel kernel = GdrKernel::kAuto;
};
TXOPS_CPP_API Status chunk_gated_delta_rule(const TensorView& query, const TensorView& key,
                                            const TensorView& value, const TensorView& beta,
                                            const TensorView& initial_state, const TensorView& actual_seq_lengths,
                                            const TensorView* g, float scale, const TensorView& out,
                                            const TensorView& final_state, const GdrPrefillOptions& options);

// Decode on a state pool. state (BlockNum, Nv, Dv, Dk) updated in place; ssm_state_indices (T,) int32;
// g (T, Nv) fp32 or null; gk (T, Nv, Dk) fp32 or null; num_accepted_tokens (B,) int32 or null.
TXOPS_CPP_API Status recurrent_gated_delta_rule(const TensorView& query, const TensorView& key,
                                                const TensorView& value, const TensorView& beta,
                                                const TensorView& state, const TensorView& actual_seq_lengths,
                                                const TensorView& ssm_state_indices, const TensorView* g,
                                                const TensorView* gk, const TensorView* num_accepted_tokens,
                                                float scale, const TensorView& out);

// Backward of chunk_gated_delta_rule (a txops extension; CANN has none): the gradients of
// L = Σ grad_out ⊙ out + Σ grad_final_state ⊙ final_state. Arguments: the forward's inputs in the forward's order
// (query, key, value, beta, initial_state, actual_seq_lengths, g, scale), then the incoming gradients
// grad_out (T, Nv, Dv) (activation dtype) and grad_final_state (B, Nv, Dv, Dk) (state dtype, or null = zero), then
// the gradients written, in the order of the inputs they belong to: grad_query, grad_key (T, Nk, Dk) — summed over
// the value heads sharing each key head — grad_value (T, Nv, Dv), grad_beta (T, Nv) (activation dtype), grad_g
// (T, Nv) fp32 (null: not computed; must be null when g is), grad_initial_state (B, Nv, Dv, Dk) (state dtype; may
// be grad_final_state itself). forward_checkpoints (optional, fp32 (R, Nv, Dv, Dk)): the snapshots the forward wrote
// with GdrPrefillOptions::checkpoint_every = 64 (fp32, default starts); given, the backward reads the state before
// each chunk from them instead of recomputing it (faster; the forward then keeps 4·Dk·Dv/64 bytes per token and
// value head). forward_corrected_values (optional, only with forward_checkpoints; fp32 (T, Nv, Dv)): the forward's
// GdrPrefillOptions::corrected_values, read instead of recomputed (faster again; another 4·Dv bytes per token and
// value head). Without them nothing is kept between the calls.
TXOPS_CPP_API Status chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key,
                                                 const TensorView& value, const TensorView& beta,
                                                 const TensorView& initial_state,
                                                 const TensorView& actual_seq_lengths, const TensorView* g,
                                                 float scale, const TensorView& grad_out,
                                                 const TensorView* grad_final_state, const TensorView& grad_query,
                                                 const TensorView& grad_key, const TensorView& grad_value,
                                                 const TensorView& grad_beta, const TensorView* grad_g,
                                                 const TensorView& grad_initial_state,
                                                 const TensorView* forward_checkpoints = nullptr,
                                                 const TensorView* forward_corrected_values = nullptr);

// ---------------------------------------------------------------------------------------------------
// Causal conv1d (docs/causal_conv1d.md): the depthwise causal convolution of Mamba / Gated DeltaNet layers,
// per sequence and channel y_t = act(bias + sum_{j<K} weight[j] * p[t + j]) over p = [K-1 history rows | x],
// act = SiLU (v / (1 + exp(-v))) or none; accumulated in fp32, rounded to x's dtype.

enum class ConvActivation : int32_t { kNone = 0, kSilu = 1 };

// Prefill. x (B, L, dim) or varlen (cuSeqLen, dim) with query_start_loc (B+1,) int32 (also allowed with 3-D x,
// then equal to 0, L, 2L, ...); weight (K, dim), K in 2..4; conv_states (lines, state_len >= K-1, dim) in x's
// dtype: sequence i uses line cache_indices[i] (int32 (B,), null = line i; null_block_id = skip: y zero, line
// untouched); its history is rows 0..K-2 of the line when initial_state_mode[i] == 1 (int32 (B,), null = all 0),
// else zeros; afterwards row r of the line holds p[K-1+L-state_len+r] (rows before p's start are left alone).
// bias (dim,) or null; y x's shape and dtype.
TXOPS_CPP_API Status causal_conv1d_fn(const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                                      const TensorView* bias, const TensorView* query_start_loc,
                                      const TensorView* cache_indices, const TensorView* initial_state_mode,
                                      ConvActivation activation, int64_t null_block_id, const TensorView& y);

// Decode, speculative tokens included. x (B, 1, dim); with num_accepted_tokens (B,) int32 also (B, L, dim) or
// varlen (cuSeqLen, dim) with query_start_loc. The history is rows o..o+K-2 of the line, o =
// max(num_accepted_tokens[i] - 1, 0) (0 without it); afterwards rows r < min(K-2+L, state_len) hold p[1 + r] (the
// window moved by one token). Other arguments as for causal_conv1d_fn.
TXOPS_CPP_API Status causal_conv1d_update(const TensorView& x, const TensorView& weight,
                                          const TensorView& conv_states, const TensorView* bias,
                                          const TensorView* query_start_loc, const TensorView* cache_indices,
                                          const TensorView* num_accepted_tokens, ConvActivation activation,
                                          int64_t null_block_id, const TensorView& y);

}  // namespace txops

#endif  // TXOPS_TXOPS_H_
