// The library baselines of the timing gate: one ATen expression per op, as the schema's semantics name it.
#include "library_baseline.h"

#include <torch/version.h>

#include <cmath>
#include <functional>
#include <map>

namespace gauntlet::worker {
namespace {

using Args = std::vector<KernelArg>;
using Baseline = std::function<at::Tensor(const Args&)>;

const at::Tensor& T(const Args& a, size_t i) { return a.at(i).tensor; }
int64_t I(const Args& a, size_t i) { return a.at(i).i; }
double D(const Args& a, size_t i) { return a.at(i).d; }
bool B(const Args& a, size_t i) { return a.at(i).b; }

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
#else
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  if (causal) {
    at::Tensor mask = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).triu(1);
    s = s.masked_fill(mask, -INFINITY);
  }
  return at::matmul(at::softmax(s, -1), v);
#endif
}

// Schema argument orders: opschemas/<op>.json (inputs, then attributes).
const std::map<std::string, Baseline>& baselines() {
  static const std::map<std::string, Baseline> table = {
      {"add", [](const Args& a) { return T(a, 0) + T(a, 1); }},
      {"amax", [](const Args& a) { return T(a, 0).amax({I(a, 1)}); }},
      {"bmm", [](const Args& a) { return at::bmm(T(a, 0), T(a, 1)); }},
      {"clamp", [](const Args& a) { return at::clamp(T(a, 0), D(a, 1), D(a, 2)); }},
      {"conv2d", [](const Args& a) {
         return at::conv2d(T(a, 0), T(a, 1), T(a, 2), {I(a, 3), I(a, 3)}, {I(a, 4), I(a, 4)});
       }},
      {"cross_entropy", [](const Args& a) { return at::nll_loss(at::log_softmax(T(a, 0), 1), T(a, 1)); }},
      {"cumsum", [](const Args& a) { return at::cumsum(T(a, 0), I(a, 1)); }},
      {"dequantize", [](const Args& a) {
         // torch.dequantize of the int8 data viewed as a per-tensor qint8 tensor (no copy of x).
         return at::dequantize(at::_make_per_tensor_quantized_tensor(T(a, 0), D(a, 1), I(a, 2)));
       }},
      {"embedding", [](const Args& a) { return at::embedding(T(a, 0), T(a, 1)); }},
      {"filter", [](const Args& a) { return T(a, 0).masked_select(T(a, 0) > D(a, 1)); }},
      {"fp8_matmul", [](const Args& a) {
         // (a.float() @ b.float()) * a_scale * b_scale, as the schema's semantics say: the e4m3
         // operands widened, one float32 GEMM (torch._scaled_mm's signature changes between
         // releases and it refuses a column-major a).
         return at::mm(T(a, 0).to(at::kFloat), T(a, 1).to(at::kFloat)) * T(a, 2) * T(a, 3);
       }},
      {"gelu", [](const Args& a) { return at::gelu(T(a, 0)); }},
      {"int8_matmul", [](const Args& a) {
         // (a.int() @ b.int()).float() * a_scale * b_scale; the integer product through float64
         // (exact: |sum| < 2^31 < 2^53), as CUDA's mm has no int32 kernel.
         const at::Tensor acc = at::mm(T(a, 0).to(at::kDouble), T(a, 1).to(at::kDouble)).to(at::kInt);
         return acc.to(at::kFloat) * T(a, 2) * T(a, 3);
       }},
      {"layer_norm", [](const Args& a) {
         return at::layer_norm(T(a, 0), {T(a, 0).size(-1)}, T(a, 1), T(a, 2), D(a, 3));
       }},
      {"linear_relu", [](const Args& a) { return at::relu(at::linear(T(a, 0), T(a, 1), T(a, 2))); }},
      {"log_softmax", [](const Args& a) { return at::log_softmax(T(a, 0), I(a, 1)); }},
      {"logsumexp", [](const Args& a) { return at::logsumexp(T(a, 0), {I(a, 1)}); }},
      {"matmul", [](const Args& a) { return at::mm(T(a, 0), T(a, 1)); }},
      {"mean", [](const Args& a) { return T(a, 0).mean({I(a, 1)}); }},
      {"quantize_per_tensor",
       [](const Args& a) { return at::quantize_per_tensor(T(a, 0), D(a, 1), I(a, 2), at::kQInt8).int_repr(); }},
      {"relu", [](const Args& a) { return at::relu(T(a, 0)); }},
      {"rms_norm", [](const Args& a) {
         // What torch.nn.functional.rms_norm computes, written with ATen ops present in every LibTorch.
         const at::Tensor& x = T(a, 0);
         return x * at::rsqrt(x.pow(2).mean({-1}, true) + D(a, 2)) * T(a, 1);
       }},
      {"sdpa", [](const Args& a) { return attention(T(a, 0), T(a, 1), T(a, 2), B(a, 3)); }},
      {"segment_sum", [](const Args& a) {
         // zeros(S, D).index_add_(0, row's segment, x); a row's segment is the last offset at or
         // before it (searchsorted, right side: empty segments are passed over), with no host sync.
         const at::Tensor& x = T(a, 0);
         const at::Tensor offsets = T(a, 1).contiguous();
         const at::Tensor rows = at::arange(x.size(0), offsets.options());
         const at::Tensor segment = at::searchsorted(offsets, rows, false, true) - 1;
         return at::zeros({offsets.numel() - 1, x.size(1)}, x.options()).index_add_(0, segment, x);
       }},
      {"group_by_sum", [](const Args& a) {
         // zeros(G).index_add_(0, keys, values): the library's own grouped sum (atomics on CUDA).
         const at::Tensor& values = T(a, 1);
         return at::zeros({I(a, 2)}, values.options()).index_add_(0, T(a, 0), values);
       }},
      {"scatter_add", [](const Args& a) {
         const at::Tensor& x = T(a, 0);
         return at::zeros({I(a, 2)}, x.options()).index_add_(0, T(a, 1), x);
       }},
      {"hash_join", [](const Args& a) {
         // Every (i, j) with left[i] == right[j], by (i, j): right sorted stably (equal keys keep
         // ascending j), each left key's run of matches found by searchsorted on both sides, the
         // pairs expanded by repeat_interleave (one host sync for P, as any join must).
         const at::Tensor left = T(a, 0).contiguous();
         const auto sorted = at::sort(T(a, 1).contiguous(), true, 0, false);
         const at::Tensor& keys = std::get<0>(sorted);
         const at::Tensor lo = at::searchsorted(keys, left, false, false);
         const at::Tensor count = at::searchsorted(keys, left, false, true) - lo;
         const at::Tensor i = at::repeat_interleave(count);
         const at::Tensor first = at::cumsum(count, 0) - count;  // each left row's first pair
         const at::Tensor pos = at::arange(i.numel(), i.options()) - first.index_select(0, i) + lo.index_select(0, i);
         return at::stack({i, std::get<1>(sorted).index_select(0, pos)}, 1);
       }},
      {"sigmoid", [](const Args& a) { return at::sigmoid(T(a, 0)); }},
      {"softmax", [](const Args& a) { return at::softmax(T(a, 0), I(a, 1)); }},
      {"sum", [](const Args& a) { return T(a, 0).sum({I(a, 1)}); }},
  };
  return table;
}

// Ops of several outputs.
const std::map<std::string, std::function<std::vector<at::Tensor>(const Args&)>>& multi_output_baselines() {
  static const std::map<std::string, std::function<std::vector<at::Tensor>(const Args&)>> table = {
      {"sort", [](const Args& a) {
         // torch.sort(keys, stable=True): the sorted keys, and the values gathered by its indices.
         const auto sorted = at::sort(T(a, 0), true, 0, false);
         return std::vector<at::Tensor>{std::get<0>(sorted), T(a, 1).index_select(0, std::get<1>(sorted))};
       }},
      {"topk", [](const Args& a) {
         const auto top = at::topk(T(a, 0), I(a, 1), -1);
         return std::vector<at::Tensor>{std::get<0>(top), std::get<1>(top)};
       }},
      {"unique", [](const Args& a) {
         // torch.unique(x, sorted=True, return_counts=True): (values, counts).
         const auto u = at::_unique2(T(a, 0), true, false, true);
         return std::vector<at::Tensor>{std::get<0>(u), std::get<2>(u)};
       }},
  };
  return table;
}

}  // namespace

bool has_library_baseline(const std::string& op) {
  return baselines().count(op) > 0 || multi_output_baselines().count(op) > 0;
}

bool library_baseline(const std::string& op, const std::vector<KernelArg>& args, std::vector<at::Tensor>* outputs,
                      std::string* error) {
  auto it = baselines().find(op);
  auto multi = multi_output_baselines().find(op);
  if (it == baselines().end() && multi == multi_output_baselines().end())
    return (*error = "no library baseline for op " + op, false);
  try {
    if (it == baselines().end()) *outputs = multi->second(args);
    else outputs->assign(1, it->second(args));
    return true;
  } catch (const c10::Error& e) {
    *error = std::string("the library baseline threw: ") + e.what_without_backtrace();
    return false;
  } catch (const std::exception& e) {
    *error = std::string("the library baseline threw: ") + e.what();
    return false;
  }
}

}  // namespace gauntlet::worker
