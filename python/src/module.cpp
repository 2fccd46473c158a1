// module.cpp — the _txops extension module: one binding per txops operator over the plain C++ API, plus the
// global settings. Tensors arrive as objects whose type has the DLPack C exchange API (torch.Tensor from
// torch 2.10: read in C with no capsule, the fast path), DLPack capsules or __dlpack__ objects (see
// tensor_import.h) and are used in place, never copied; outputs are allocated by the Python layer in the
// caller's framework. The GIL is released while an operator runs; a failed Status becomes a Python exception
// carrying txops' message. The _eager_* entries are the plain-eager fast path over the same bindings
// (METH_FASTCALL, the dispatch decision in C: eager_gate.h).
// The Pythonic API (defaults, autograd, framework handling) lives in python/txops/*.py.
#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "eager_gate.h"
#include "rope_family.h"
#include "tensor_import.h"
#include "txops/txops.h"
#include "txops/version.h"

namespace py = pybind11;
using txops_python::eager_call;
using txops_python::float_arg;
using txops_python::int64_arg;
using txops_python::int_arg;
using txops_python::ImportedTensors;
using txops_python::raise_status;

namespace {

// Benchmark hook: when > 1, each binding runs its C++ call this many times back to back (GIL released) and
// records the mean seconds of one C++ call, so Python can compare its own per-call time with the C++ call's.
int g_repeat = 1;
double g_last_cpp_seconds = 0.0;

template <typename Call>
void run_without_gil(Call&& call) {
  txops::Status status;
  {
    py::gil_scoped_release release;
    if (g_repeat <= 1) {
      status = call();
    } else {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < g_repeat && status.ok(); ++i) status = call();
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      g_last_cpp_seconds = elapsed.count() / g_repeat;
    }
  }
  if (!status.ok()) raise_status(status);
}

const txops::TensorView* if_present(const txops::TensorView& view, bool present) {
  return present ? &view : nullptr;
}

void interleave_rope(py::handle x, py::handle cos, py::handle sin, py::handle out) {
  ImportedTensors t;
  const auto xv = t.view(x, "x"), cv = t.view(cos, "cos"), sv = t.view(sin, "sin"), ov = t.view(out, "out");
  run_without_gil([&] { return txops::interleave_rope(xv, cv, sv, ov); });
}

void inplace_partial_rotary_mul(py::handle x, py::handle cos, py::handle sin, int mode, int64_t start, int64_t end) {
  ImportedTensors t;
  const auto xv = t.view(x, "x"), cv = t.view(cos, "cos"), sv = t.view(sin, "sin");
  const auto m = static_cast<txops::RotaryMode>(mode);
  run_without_gil([&] { return txops::inplace_partial_rotary_mul(xv, cv, sv, m, start, end); });
}

void inplace_partial_rotary_mul_grad(py::handle dy, py::handle cos, py::handle sin, int mode, int64_t start,
                                     int64_t end) {
  ImportedTensors t;
  const auto dv = t.view(dy, "grad_output"), cv = t.view(cos, "cos"), sv = t.view(sin, "sin");
  const auto m = static_cast<txops::RotaryMode>(mode);
  run_without_gil([&] { return txops::inplace_partial_rotary_mul_grad(dv, cv, sv, m, start, end); });
}

void apply_rotary_pos_emb(py::handle query, py::handle key, py::handle cos, py::handle sin, int layout, int mode) {
  ImportedTensors t;
  const auto qv = t.view(query, "query"), kv = t.view(key, "key"), cv = t.view(cos, "cos"), sv = t.view(sin, "sin");
  const auto l = static_cast<txops::Layout>(layout);
  const auto m = static_cast<txops::RotaryMode>(mode);
  run_without_gil([&] { return txops::apply_rotary_pos_emb(qv, kv, cv, sv, l, m); });
}

void apply_rotary_pos_emb_grad(py::handle grad_query_embed, py::handle grad_key_embed, py::handle cos,
                               py::handle sin, py::handle query, py::handle key, int mode, int layout,
                               py::handle grad_query, py::handle grad_key, py::handle grad_cos,
                               py::handle grad_sin) {
  ImportedTensors t;
  const auto gqe = t.view(grad_query_embed, "grad_query_embed"), gke = t.view(grad_key_embed, "grad_key_embed");
  const auto cv = t.view(cos, "cos"), sv = t.view(sin, "sin");
  bool has_q, has_k, has_gc, has_gs;
  const auto qv = t.optional_view(query, "query", &has_q), kv = t.optional_view(key, "key", &has_k);
  const auto gq = t.view(grad_query, "grad_query"), gk = t.view(grad_key, "grad_key");
  const auto gc = t.optional_view(grad_cos, "grad_cos", &has_gc), gs = t.optional_view(grad_sin, "grad_sin", &has_gs);
  const auto m = static_cast<txops::RotaryMode>(mode);
  const auto l = static_cast<txops::Layout>(layout);
  run_without_gil([&] {
    return txops::apply_rotary_pos_emb_grad(gqe, gke, cv, sv, if_present(qv, has_q), if_present(kv, has_k), m, l, gq,
                                            gk, if_present(gc, has_gc), if_present(gs, has_gs));
  });
}

void chunk_gated_delta_rule(py::handle query, py::handle key, py::handle value, py::handle beta,
                            py::handle initial_state, py::handle actual_seq_lengths, py::handle g, float scale,
                            py::handle out, py::handle final_state) {
  ImportedTensors t;
  const auto qv = t.view(query, "query"), kv = t.view(key, "key"), vv = t.view(value, "value");
  const auto bv = t.view(beta, "beta"), iv = t.view(initial_state, "initial_state");
  const auto lv = t.view(actual_seq_lengths, "actual_seq_lengths");
  bool has_g;
  const auto gv = t.optional_view(g, "g", &has_g);
  const auto ov = t.view(out, "out"), fv = t.view(final_state, "final_state");
  run_without_gil([&] {
    return txops::chunk_gated_delta_rule(qv, kv, vv, bv, iv, lv, if_present(gv, has_g), scale, ov, fv);
  });
}

// The prefill with its serving options (GdrPrefillOptions): pool indices, zero starts, snapshots, kernel, and the
// corrected values of training.
void chunk_gated_delta_rule_ex(py::handle query, py::handle key, py::handle value, py::handle beta,
                               py::handle initial_state, py::handle actual_seq_lengths, py::handle g, float scale,
                               py::handle out, py::handle final_state, py::handle state_indices,
                               py::handle has_initial_state, int64_t checkpoint_every, py::handle checkpoints,
                               py::handle checkpoint_starts, int kernel, py::handle corrected_values) {
  ImportedTensors t;
  const auto qv = t.view(query, "query"), kv = t.view(key, "key"), vv = t.view(value, "value");
  const auto bv = t.view(beta, "beta"), iv = t.view(initial_state, "initial_state");
  const auto lv = t.view(actual_seq_lengths, "actual_seq_lengths");
  bool has_g, has_idx, has_has, has_cps, has_starts, has_cvs;
  const auto gv = t.optional_view(g, "g", &has_g);
  const auto ov = t.view(out, "out"), fv = t.view(final_state, "final_state");
  const auto idx = t.optional_view(state_indices, "state_indices", &has_idx);
  const auto hv = t.optional_view(has_initial_state, "has_initial_state", &has_has);
  const auto cv = t.optional_view(checkpoints, "checkpoints", &has_cps);
  const auto sv = t.optional_view(checkpoint_starts, "checkpoint_starts", &has_starts);
  const auto cvv = t.optional_view(corrected_values, "corrected_values", &has_cvs);
  txops::GdrPrefillOptions o;
  o.corrected_values = if_present(cvv, has_cvs);
  o.state_indices = if_present(idx, has_idx);
  o.has_initial_state = if_present(hv, has_has);
  o.checkpoints = if_present(cv, has_cps);
  o.checkpoint_starts = if_present(sv, has_starts);
  o.checkpoint_every = checkpoint_every;
  o.kernel = static_cast<txops::GdrKernel>(kernel);
  run_without_gil([&] {
    return txops::chunk_gated_delta_rule(qv, kv, vv, bv, iv, lv, if_present(gv, has_g), scale, ov, fv, o);
  });
}

void chunk_gated_delta_rule_grad(py::handle query, py::handle key, py::handle value, py::handle beta,
                                 py::handle initial_state, py::handle actual_seq_lengths, py::handle g, float scale,
                                 py::handle grad_out, py::handle grad_final_state, py::handle grad_query,
                                 py::handle grad_key, py::handle grad_value, py::handle grad_beta, py::handle grad_g,
                                 py::handle grad_initial_state, py::handle forward_checkpoints,
                                 py::handle forward_corrected_values) {
  ImportedTensors t;
  const auto qv = t.view(query, "query"), kv = t.view(key, "key"), vv = t.view(value, "value");
  const auto bv = t.view(beta, "beta"), iv = t.view(initial_state, "initial_state");
  const auto lv = t.view(actual_seq_lengths, "actual_seq_lengths");
  bool has_g, has_dfinal, has_dg;
  const auto gv = t.optional_view(g, "g", &has_g);
  const auto dov = t.view(grad_out, "grad_out");
  const auto dfv = t.optional_view(grad_final_state, "grad_final_state", &has_dfinal);
  const auto dqv = t.view(grad_query, "grad_query"), dkv = t.view(grad_key, "grad_key");
  const auto dvv = t.view(grad_value, "grad_value"), dbv = t.view(grad_beta, "grad_beta");
  const auto dgv = t.optional_view(grad_g, "grad_g", &has_dg);
  const auto dsv = t.view(grad_initial_state, "grad_initial_state");
  bool has_cps;
  const auto cv = t.optional_view(forward_checkpoints, "forward_checkpoints", &has_cps);
  bool has_cvs;
  const auto cvv = t.optional_view(forward_corrected_values, "forward_corrected_values", &has_cvs);
  run_without_gil([&] {
    return txops::chunk_gated_delta_rule_grad(qv, kv, vv, bv, iv, lv, if_present(gv, has_g), scale, dov,
                                              if_present(dfv, has_dfinal), dqv, dkv, dvv, dbv,
                                              if_present(dgv, has_dg), dsv, if_present(cv, has_cps),
                                              if_present(cvv, has_cvs));
  });
}

void recurrent_gated_delta_rule(py::handle query, py::handle key, py::handle value, py::handle beta,
                                py::handle state, py::handle actual_seq_lengths, py::handle ssm_state_indices,
                                py::handle g, py::handle gk, py::handle num_accepted_tokens, float scale,
                                py::handle out) {
  ImportedTensors t;
  const auto qv = t.view(query, "query"), kv = t.view(key, "key"), vv = t.view(value, "value");
  const auto bv = t.view(beta, "beta"), sv = t.view(state, "state");
  const auto lv = t.view(actual_seq_lengths, "actual_seq_lengths");
  const auto iv = t.view(ssm_state_indices, "ssm_state_indices");
  bool has_g, has_gk, has_n;
  const auto gv = t.optional_view(g, "g", &has_g), gkv = t.optional_view(gk, "gk", &has_gk);
  const auto nv = t.optional_view(num_accepted_tokens, "num_accepted_tokens", &has_n);
  const auto ov = t.view(out, "out");
  run_without_gil([&] {
    return txops::recurrent_gated_delta_rule(qv, kv, vv, bv, sv, lv, iv, if_present(gv, has_g),
                                             if_present(gkv, has_gk), if_present(nv, has_n), scale, ov);
  });
}

void causal_conv1d(bool update, py::handle x, py::handle weight, py::handle conv_states, py::handle bias,
                   py::handle query_start_loc, py::handle cache_indices, py::handle per_sequence, int activation,
                   int64_t null_block_id, py::handle y) {
  ImportedTensors t;
  const auto xv = t.view(x, "x"), wv = t.view(weight, "weight"), sv = t.view(conv_states, "conv_states");
  bool has_bias, has_qsl, has_idx, has_per;
  const auto bv = t.optional_view(bias, "bias", &has_bias);
  const auto qv = t.optional_view(query_start_loc, "query_start_loc", &has_qsl);
  const auto iv = t.optional_view(cache_indices, "cache_indices", &has_idx);
  const auto pv = t.optional_view(per_sequence, update ? "num_accepted_tokens" : "initial_state_mode", &has_per);
  const auto yv = t.view(y, "out");
  const auto act = static_cast<txops::ConvActivation>(activation);
  run_without_gil([&] {
    auto* fn = update ? &txops::causal_conv1d_update : &txops::causal_conv1d_fn;
    return fn(xv, wv, sv, if_present(bv, has_bias), if_present(qv, has_qsl), if_present(iv, has_idx),
              if_present(pv, has_per), act, null_block_id, yv);
  });
}

void causal_conv1d_fn(py::handle x, py::handle weight, py::handle conv_states, py::handle bias,
                      py::handle query_start_loc, py::handle cache_indices, py::handle initial_state_mode,
                      int activation, int64_t null_block_id, py::handle y) {
  causal_conv1d(false, x, weight, conv_states, bias, query_start_loc, cache_indices, initial_state_mode, activation,
                null_block_id, y);
}

void causal_conv1d_update(py::handle x, py::handle weight, py::handle conv_states, py::handle bias,
                          py::handle query_start_loc, py::handle cache_indices, py::handle num_accepted_tokens,
                          int activation, int64_t null_block_id, py::handle y) {
  causal_conv1d(true, x, weight, conv_states, bias, query_start_loc, cache_indices, num_accepted_tokens, activation,
                null_block_id, y);
}

// ---- the plain-eager fast path: METH_FASTCALL entries over the bindings above (eager_gate.h) -------------
// Positional arguments as the bindings take them; True when the call ran, False when the gate sent it back to
// the Python wrapper's general path.

PyObject* eager_interleave_rope(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_interleave_rope", a, n, 4, {3}, [&] { interleave_rope(a[0], a[1], a[2], a[3]); });
}

PyObject* eager_inplace_partial_rotary_mul(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_inplace_partial_rotary_mul", a, n, 6, {0}, [&] {
    inplace_partial_rotary_mul(a[0], a[1], a[2], int_arg(a[3]), int64_arg(a[4]), int64_arg(a[5]));
  });
}

PyObject* eager_inplace_partial_rotary_mul_grad(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_inplace_partial_rotary_mul_grad", a, n, 6, {0}, [&] {
    inplace_partial_rotary_mul_grad(a[0], a[1], a[2], int_arg(a[3]), int64_arg(a[4]), int64_arg(a[5]));
  });
}

PyObject* eager_apply_rotary_pos_emb(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_apply_rotary_pos_emb", a, n, 6, {0, 1}, [&] {
    apply_rotary_pos_emb(a[0], a[1], a[2], a[3], int_arg(a[4]), int_arg(a[5]));
  });
}

PyObject* eager_apply_rotary_pos_emb_grad(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_apply_rotary_pos_emb_grad", a, n, 12, {8, 9, 10, 11}, [&] {
    apply_rotary_pos_emb_grad(a[0], a[1], a[2], a[3], a[4], a[5], int_arg(a[6]), int_arg(a[7]), a[8], a[9], a[10],
                              a[11]);
  });
}

PyObject* eager_recurrent_gated_delta_rule(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_recurrent_gated_delta_rule", a, n, 12, {4, 11}, [&] {
    recurrent_gated_delta_rule(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], float_arg(a[10]), a[11]);
  });
}

PyObject* eager_causal_conv1d_fn(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_causal_conv1d_fn", a, n, 10, {2, 9}, [&] {
    causal_conv1d_fn(a[0], a[1], a[2], a[3], a[4], a[5], a[6], int_arg(a[7]), int64_arg(a[8]), a[9]);
  });
}

PyObject* eager_causal_conv1d_update(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_causal_conv1d_update", a, n, 10, {2, 9}, [&] {
    causal_conv1d_update(a[0], a[1], a[2], a[3], a[4], a[5], a[6], int_arg(a[7]), int64_arg(a[8]), a[9]);
  });
}

#define TXOPS_EAGER_ENTRY(name) \
  {"_eager_" #name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&eager_##name)), METH_FASTCALL, \
   "Plain-eager fast path of " #name " (positional arguments as the binding): True when it ran."}
PyMethodDef g_eager_entries[] = {
    TXOPS_EAGER_ENTRY(interleave_rope),
    TXOPS_EAGER_ENTRY(inplace_partial_rotary_mul),
    TXOPS_EAGER_ENTRY(inplace_partial_rotary_mul_grad),
    TXOPS_EAGER_ENTRY(apply_rotary_pos_emb),
    TXOPS_EAGER_ENTRY(apply_rotary_pos_emb_grad),
    TXOPS_EAGER_ENTRY(recurrent_gated_delta_rule),
    TXOPS_EAGER_ENTRY(causal_conv1d_fn),
    TXOPS_EAGER_ENTRY(causal_conv1d_update),
    {nullptr, nullptr, 0, nullptr},
};
#undef TXOPS_EAGER_ENTRY

txops::Isa isa_from_name(const std::string& name) {
  if (name == "scalar") return txops::Isa::kScalar;
  if (name == "avx2") return txops::Isa::kAvx2;
  if (name == "avx512") return txops::Isa::kAvx512;
  throw py::value_error("isa must be one of 'scalar', 'avx2', 'avx512', got '" + name + "'");
}

txops::Compat compat_from_name(const std::string& name) {
  if (name == "txops") return txops::Compat::kTxops;
  if (name == "cann") return txops::Compat::kCann;
  throw py::value_error("mode must be one of 'txops', 'cann', got '" + name + "'");
}

}  // namespace

PYBIND11_MODULE(_txops, m) {
  m.doc() = "txops operators over DLPack tensors (use the txops package, not this module, directly)";
  m.attr("__version__") = txops::version();  // the library's, so txops.__version__ is the C++ one
  using py::arg;
  m.def("interleave_rope", &interleave_rope, arg("x"), arg("cos"), arg("sin"), arg("out"));
  m.def("inplace_partial_rotary_mul", &inplace_partial_rotary_mul, arg("x"), arg("cos"), arg("sin"), arg("mode"),
        arg("start"), arg("end"));
  m.def("inplace_partial_rotary_mul_grad", &inplace_partial_rotary_mul_grad, arg("grad_output"), arg("cos"),
        arg("sin"), arg("mode"), arg("start"), arg("end"));
  m.def("apply_rotary_pos_emb", &apply_rotary_pos_emb, arg("query"), arg("key"), arg("cos"), arg("sin"),
        arg("layout"), arg("mode"));
  m.def("apply_rotary_pos_emb_grad", &apply_rotary_pos_emb_grad, arg("grad_query_embed"), arg("grad_key_embed"),
        arg("cos"), arg("sin"), arg("query").none(true), arg("key").none(true), arg("mode"), arg("layout"),
        arg("grad_query"), arg("grad_key"), arg("grad_cos").none(true), arg("grad_sin").none(true));
  m.def("chunk_gated_delta_rule", &chunk_gated_delta_rule, arg("query"), arg("key"), arg("value"), arg("beta"),
        arg("initial_state"), arg("actual_seq_lengths"), arg("g").none(true), arg("scale"), arg("out"),
        arg("final_state"));
  m.def("chunk_gated_delta_rule_ex", &chunk_gated_delta_rule_ex, arg("query"), arg("key"), arg("value"), arg("beta"),
        arg("initial_state"), arg("actual_seq_lengths"), arg("g").none(true), arg("scale"), arg("out"),
        arg("final_state"), arg("state_indices").none(true), arg("has_initial_state").none(true),
        arg("checkpoint_every"), arg("checkpoints").none(true), arg("checkpoint_starts").none(true), arg("kernel"),
        arg("corrected_values").none(true) = py::none());
  m.def("chunk_gated_delta_rule_grad", &chunk_gated_delta_rule_grad, arg("query"), arg("key"), arg("value"),
        arg("beta"), arg("initial_state"), arg("actual_seq_lengths"), arg("g").none(true), arg("scale"),
        arg("grad_out"), arg("grad_final_state").none(true), arg("grad_query"), arg("grad_key"), arg("grad_value"),
        arg("grad_beta"), arg("grad_g").none(true), arg("grad_initial_state"),
        arg("forward_checkpoints").none(true) = py::none(), arg("forward_corrected_values").none(true) = py::none());
  m.def("recurrent_gated_delta_rule", &recurrent_gated_delta_rule, arg("query"), arg("key"), arg("value"),
        arg("beta"), arg("state"), arg("actual_seq_lengths"), arg("ssm_state_indices"), arg("g").none(true),
        arg("gk").none(true), arg("num_accepted_tokens").none(true), arg("scale"), arg("out"));

  m.def("causal_conv1d_fn", &causal_conv1d_fn, arg("x"), arg("weight"), arg("conv_states"), arg("bias").none(true),
        arg("query_start_loc").none(true), arg("cache_indices").none(true), arg("initial_state_mode").none(true),
        arg("activation"), arg("null_block_id"), arg("out"));
  m.def("causal_conv1d_update", &causal_conv1d_update, arg("x"), arg("weight"), arg("conv_states"),
        arg("bias").none(true), arg("query_start_loc").none(true), arg("cache_indices").none(true),
        arg("num_accepted_tokens").none(true), arg("activation"), arg("null_block_id"), arg("out"));

  txops_python::bind_rope_family(m);

  m.def("num_threads", &txops::num_threads, "Threads the operators use.");
  m.def("set_num_threads", &txops::set_num_threads, arg("n"), "Sets the thread count (0: back to the default).");
  m.def("active_isa", [] { return std::string(txops::isa_name(txops::active_isa())); });
  m.def("set_max_isa", [](const std::string& name) { txops::set_max_isa(isa_from_name(name)); }, arg("isa"));
  m.def("cpu_has_avx512_bf16", &txops::cpu_has_avx512_bf16);
  m.def("compat_mode", [] { return std::string(txops::compat_mode() == txops::Compat::kCann ? "cann" : "txops"); });
  m.def("set_compat_mode", [](const std::string& name) { txops::set_compat_mode(compat_from_name(name)); },
        arg("mode"));
  m.def("verbose", &txops::verbose);
  m.def("set_verbose", &txops::set_verbose, arg("on"));

  m.def("_has_exchange_api", [](py::handle type) { return txops_python::has_exchange_api(type); }, arg("type"),
        "True when tensors of this type may be passed as they are (read through type.__dlpack_c_exchange_api__, "
        "no DLPack capsule).");
  m.def("_set_torch_hooks", &txops_python::set_torch_hooks, arg("tensor_type"), arg("is_grad_enabled"),
        arg("dispatch_stack_len"), arg("increment_version"),
        "Opens the plain-eager fast path (the _eager_* entries) for tensors of this exact type.");
  if (PyModule_AddFunctions(m.ptr(), g_eager_entries) != 0) throw py::error_already_set();
  m.def("_set_repeat", [](int n) { g_repeat = n < 1 ? 1 : n; }, arg("n"),
        "Benchmark hook: run each C++ call n times per binding call (n = 1: normal).");
  m.def("_last_cpp_seconds", [] { return g_last_cpp_seconds; },
        "Mean seconds of one C++ call in the last repeated binding call.");
}
