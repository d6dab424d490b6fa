// fp64 gradient reference: the oracle's Jacobian by LibTorch autograd, checked by a directional
// finite difference; central finite differences where autograd is not defined or disagrees.
#include "gauntlet/oracle/gradient_oracle.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gauntlet/oracle/oracle.h"

namespace gauntlet {
namespace {

// Central-difference step relative to max(1, |x|): cbrt(2^-52) balances the O(h^2) truncation
// against the O(u/h) rounding of the difference, leaving about 1e-10 relative error, far below
// every float32/float16/bfloat16 tolerance.
constexpr double kFdStep = 6.0555e-6;
// The directional cross-check only catches an autograd path that is wrong (a detached or
// non-differentiable step inside an oracle), not rounding: it allows 1e-6 of the Jacobian's own
// magnitude plus the difference quotient's rounding.
constexpr double kDirectionalRel = 1e-6;
// Relative step of the estimated sensitivity (a difference of finite-difference gradients): larger
// than kFdStep so the inner differences' ~1e-10 noise stays ~1e-6 of the gradient; its O(h^2)
// truncation is immaterial for a tolerance term.
constexpr double kSensitivityStep = 1e-4;

bool floating(const at::Tensor& t) { return t.defined() && at::isFloatingType(t.scalar_type()); }

// Every floating output of an oracle run, flattened into one float64 vector.
at::Tensor flat_outputs(const OracleResult& r) {
  std::vector<at::Tensor> parts;
  for (const at::Tensor& o : r.outputs)
    if (floating(o)) parts.push_back(o.reshape({-1}));
  return parts.empty() ? at::zeros({0}, at::kDouble) : at::cat(parts);
}

// float64 copies of the inputs (indices stay as they are); never aliases the caller's tensors.
std::vector<at::Tensor> double_inputs(const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : inputs)
    out.push_back(floating(t) ? t.detach().to(at::kCPU).to(at::kDouble).contiguous().clone() : t);
  return out;
}

// The oracle run on fresh leaves that require grad (its floating inputs): the outputs flattened
// into one tensor, connected to `wrt`, the leaves of inputs `which`. The caller holds autograd on.
struct GraphedOracle {
  at::Tensor y;
  std::vector<at::Tensor> wrt;
  std::vector<size_t> which;
};

std::string run_graphed_oracle(const std::string& id, const std::vector<at::Tensor>& x, const AttrMap& attrs,
                               GraphedOracle* run) {
  std::vector<at::Tensor> leaves = x;
  for (size_t k = 0; k < x.size(); ++k)
    if (floating(x[k])) {
      leaves[k] = x[k].detach().clone().requires_grad_(true);
      run->wrt.push_back(leaves[k]);
      run->which.push_back(k);
    }
  OracleResult r = run_oracle(id, leaves, attrs);
  if (!r.ok()) return r.error;
  run->y = flat_outputs(r);
  if (!run->y.requires_grad()) return "the oracle's outputs are not connected to its inputs in the autograd graph";
  return "";
}

// J[k]: [outputs, numel(input k)] by one reverse pass per output element.
std::string autograd_jacobian(const std::string& id, const std::vector<at::Tensor>& x, const AttrMap& attrs,
                              std::vector<at::Tensor>* J) {
  at::AutoGradMode enable(true);
  GraphedOracle run;
  if (std::string error = run_graphed_oracle(id, x, attrs, &run); !error.empty()) return error;
  const auto& [y, wrt, which] = run;
  const int64_t n = y.numel();
  J->assign(x.size(), at::Tensor());
  for (size_t w = 0; w < which.size(); ++w) (*J)[which[w]] = at::zeros({n, x[which[w]].numel()}, at::kDouble);
  for (int64_t o = 0; o < n; ++o) {
    const auto g = torch::autograd::grad({y[o]}, wrt, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                         /*allow_unused=*/true);
    for (size_t w = 0; w < which.size(); ++w)
      if (g[w].defined()) (*J)[which[w]][o].copy_(g[w].reshape({-1}));
  }
  return "";
}

// f(x + h*v) - f(x - h*v) over 2h, for perturbations `v` (one per input; undefined: unchanged).
std::string difference(const std::string& id, const std::vector<at::Tensor>& x, const std::vector<at::Tensor>& v,
                       double h, const AttrMap& attrs, at::Tensor* out) {
  std::vector<at::Tensor> plus = x, minus = x;
  for (size_t k = 0; k < x.size(); ++k)
    if (v[k].defined()) {
      plus[k] = x[k] + h * v[k];
      minus[k] = x[k] - h * v[k];
    }
  OracleResult a = run_oracle(id, plus, attrs), b = run_oracle(id, minus, attrs);
  if (!a.ok()) return a.error;
  if (!b.ok()) return b.error;
  const at::Tensor fa = flat_outputs(a), fb = flat_outputs(b);
  // A data-dependent length (a filter's) that changes within the step: no derivative at this point.
  if (fa.numel() != fb.numel())
    return "the output's length changes within a step of " + std::to_string(h) +
           " (a data-dependent output at a boundary, such as an element at a filter's threshold): not differentiable here";
  *out = (fa - fb) / (2 * h);
  return "";
}

std::string fd_jacobian(const std::string& id, const std::vector<at::Tensor>& x, const AttrMap& attrs,
                        int64_t n, std::vector<at::Tensor>* J) {
  J->assign(x.size(), at::Tensor());
  for (size_t k = 0; k < x.size(); ++k) {
    if (!floating(x[k])) continue;
    const int64_t m = x[k].numel();
    (*J)[k] = at::zeros({n, m}, at::kDouble);
    const at::Tensor flat = x[k].reshape({-1});
    for (int64_t i = 0; i < m; ++i) {
      std::vector<at::Tensor> v(x.size());
      v[k] = at::zeros({m}, at::kDouble);
      v[k][i] = 1.0;
      v[k] = v[k].view(x[k].sizes());
      at::Tensor col;
      const double h = kFdStep * std::max(1.0, std::fabs(flat[i].item<double>()));
      std::string e = difference(id, x, v, h, attrs, &col);
      if (!e.empty()) return e;
      (*J)[k].select(1, i).copy_(col);
    }
  }
  return "";
}

// Sensitivity of the gradient G = J^T g to relative input perturbations, by double backward:
// sens_i = sum_m |dG_i/dx_m| |x_m|. A float backward recomputes the forward's statistics (a row's
// mean, rstd, the softmax denominator) with relative errors ~u in its inputs' terms; this is what
// those errors move G by, as the forward oracles' scales count the same for the forward.
std::string autograd_sensitivity(const std::string& id, const std::vector<at::Tensor>& x, const AttrMap& attrs,
                                 const at::Tensor& g, std::vector<at::Tensor>* sens) {
  at::AutoGradMode enable(true);
  GraphedOracle run;
  if (std::string error = run_graphed_oracle(id, x, attrs, &run); !error.empty()) return error;
  const auto& [y, wrt, which] = run;
  const auto G = torch::autograd::grad({y}, wrt, {g}, /*retain_graph=*/true, /*create_graph=*/true,
                                       /*allow_unused=*/true);
  sens->assign(x.size(), at::Tensor());
  for (size_t w = 0; w < which.size(); ++w) {
    const at::Tensor& xw = x[which[w]];
    (*sens)[which[w]] = at::zeros(xw.sizes(), at::kDouble);
    // Undefined or not requiring grad: the gradient does not depend on the inputs (a linear op).
    if (!G[w].defined() || !G[w].requires_grad()) continue;
    const at::Tensor Gf = G[w].reshape({-1});
    at::Tensor out = (*sens)[which[w]].view({-1});
    for (int64_t i = 0; i < Gf.numel(); ++i) {
      const auto h = torch::autograd::grad({Gf[i]}, wrt, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                           /*allow_unused=*/true);
      double total = 0;
      for (size_t v = 0; v < which.size(); ++v)
        if (h[v].defined()) total += (h[v].abs() * x[which[v]].abs()).sum().item<double>();
      out[i] = total;
    }
  }
  return "";
}

// Where autograd is unavailable: the same sensitivity estimated by differencing the finite-
// difference gradient along a few random-sign relative perturbations (a lower estimate of the sum).
std::string fd_sensitivity(const std::string& id, const std::vector<at::Tensor>& x, const AttrMap& attrs, int64_t n,
                           const at::Tensor& g, std::vector<at::Tensor>* sens) {
  sens->assign(x.size(), at::Tensor());
  for (size_t k = 0; k < x.size(); ++k)
    if (floating(x[k])) (*sens)[k] = at::zeros(x[k].sizes(), at::kDouble);
  for (int d = 1; d <= 3; ++d) {
    std::vector<at::Tensor> plus = x, minus = x;
    for (size_t k = 0; k < x.size(); ++k)
      if (floating(x[k])) {
        const at::Tensor sign = at::sign(at::cos(at::arange(x[k].numel(), at::kDouble) * (0.7548 * d) + double(k + d)));
        const at::Tensor step = kSensitivityStep * x[k].abs() * sign.view(x[k].sizes());
        plus[k] = x[k] + step;
        minus[k] = x[k] - step;
      }
    std::vector<at::Tensor> Jp, Jm;
    std::string e = fd_jacobian(id, plus, attrs, n, &Jp);
    if (e.empty()) e = fd_jacobian(id, minus, attrs, n, &Jm);
    if (!e.empty()) return e;
    for (size_t k = 0; k < x.size(); ++k)
      if (Jp[k].defined())
        (*sens)[k] = at::maximum((*sens)[k], (at::mv(Jp[k].t(), g) - at::mv(Jm[k].t(), g)).abs().view(x[k].sizes()) /
                                                 (2 * kSensitivityStep));
  }
  return "";
}

// Compares J*v with a difference quotient along a fixed direction; "" when they agree.
std::string directional_check(const std::string& id, const std::vector<at::Tensor>& x, const AttrMap& attrs,
                              const std::vector<at::Tensor>& J, const at::Tensor& y) {
  std::vector<at::Tensor> v(x.size());
  at::Tensor jv = at::zeros_like(y), ajv = at::zeros_like(y);
  double h = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    if (!J[k].defined()) continue;
    const int64_t m = x[k].numel();
    v[k] = at::cos(at::arange(m, at::kDouble) * 0.61803 + double(k)).view(x[k].sizes());
    jv += at::mv(J[k], v[k].reshape({-1}));
    ajv += at::mv(J[k].abs(), v[k].reshape({-1}).abs());
    if (m) h = std::max(h, kFdStep * std::max(1.0, x[k].abs().max().item<double>()));
  }
  if (h == 0) return "";
  at::Tensor fd;
  std::string e = difference(id, x, v, h, attrs, &fd);
  if (!e.empty()) return e;
  const at::Tensor allowed = kDirectionalRel * ajv + 1e-13 * (1 + y.abs()) / h;
  const at::Tensor off = ((fd - jv).abs() > allowed) & at::isfinite(fd) & at::isfinite(jv);
  if (!off.any().item<bool>()) return "";
  const int64_t o = off.to(at::kLong).argmax().item<int64_t>();
  char buf[160];
  std::snprintf(buf, sizeof buf, "autograd gives %.9g along a test direction at output element %lld, "
                "a difference quotient %.9g", jv[o].item<double>(), (long long)o, fd[o].item<double>());
  return buf;
}

GradientReference compute(const std::string& id, const std::vector<at::Tensor>& inputs, const AttrMap& attrs,
                          const std::vector<at::Tensor>& grad_outputs, const GradientOptions& options) {
  GradientReference ref;
  const std::vector<at::Tensor> x = double_inputs(inputs);
  OracleResult fwd = run_oracle(id, x, attrs);
  if (!fwd.ok()) return (ref.error = fwd.error, ref);
  if (grad_outputs.size() != fwd.outputs.size())
    return (ref.error = std::to_string(grad_outputs.size()) + " output gradients for " +
                        std::to_string(fwd.outputs.size()) + " outputs", ref);
  std::vector<at::Tensor> gparts;
  for (size_t i = 0; i < fwd.outputs.size(); ++i) {
    if (!floating(fwd.outputs[i])) continue;
    if (!grad_outputs[i].sizes().equals(fwd.outputs[i].sizes()))
      return (ref.error = "output gradient " + std::to_string(i) + " does not have its output's shape", ref);
    gparts.push_back(grad_outputs[i].to(at::kDouble).reshape({-1}));
  }
  const at::Tensor y = flat_outputs(fwd);
  const at::Tensor g = gparts.empty() ? at::zeros({0}, at::kDouble) : at::cat(gparts);
  int64_t in_numel = 0;
  for (const at::Tensor& t : x)
    if (floating(t)) in_numel += t.numel();
  if (y.numel() * in_numel > options.max_jacobian_entries)
    return (ref.error = "the Jacobian would have " + std::to_string(y.numel() * in_numel) +
                        " entries, more than the gradient reference computes", ref);

  std::vector<at::Tensor> J;
  std::string why = options.force_finite_differences ? "requested" : autograd_jacobian(id, x, attrs, &J);
  if (why.empty()) why = directional_check(id, x, attrs, J, y);
  if (why.empty()) {
    ref.method = "autograd";
  } else {
    ref.method = "finite differences (" + why + ")";
    std::string e = fd_jacobian(id, x, attrs, y.numel(), &J);
    if (!e.empty()) return (ref.error = "finite differences: " + e, ref);
  }
  std::vector<at::Tensor> sens;
  std::string e = ref.method == "autograd" ? autograd_sensitivity(id, x, attrs, g, &sens) : "finite differences";
  if (!e.empty()) {
    e = fd_sensitivity(id, x, attrs, y.numel(), g, &sens);
    if (!e.empty()) return (ref.error = "finite differences: " + e, ref);
  }
  const at::Tensor ag = g.abs(), nz = (g != 0).to(at::kDouble);
  for (size_t k = 0; k < x.size(); ++k) {
    if (!J[k].defined()) {
      ref.grads.emplace_back();
      ref.scales.emplace_back();
      ref.terms.emplace_back();
      ref.sensitivity.emplace_back();
      continue;
    }
    ref.grads.push_back(at::mv(J[k].t(), g).view(x[k].sizes()));
    ref.sensitivity.push_back(sens[k]);
    ref.scales.push_back(at::mv(J[k].abs().t(), ag).view(x[k].sizes()) + sens[k]);
    ref.terms.push_back(at::mv((J[k] != 0).to(at::kDouble).t(), nz).round().to(at::kLong).view(x[k].sizes()));
  }
  return ref;
}

}  // namespace

GradientReference gradient_reference(const std::string& oracle_id, const std::vector<at::Tensor>& inputs,
                                     const AttrMap& attrs, const std::vector<at::Tensor>& grad_outputs,
                                     const GradientOptions& options) {
  try {
    return compute(oracle_id, inputs, attrs, grad_outputs, options);
  } catch (const c10::Error& e) {
    GradientReference r;
    r.error = e.what_without_backtrace();
    return r;
  } catch (const std::exception& e) {
    GradientReference r;
    r.error = e.what();
    return r;
  }
}

Tolerance gradient_tolerance(const Tolerance& forward) {
  Tolerance t = forward;
  t.mode = "reduction";
  // An elementwise forward's ulp budget (or an exact one's 0) still leaves the backward two
  // roundings: the derivative and its product with g. At least 2 ulps, and the reduction
  // constant 8 the reduction schemas use where the forward declares none.
  t.ulps = std::max(forward.ulps, 2.0);
  if (!(t.c > 0)) t.c = 8;
  if (t.accumulator.empty()) t.accumulator = "float32";
  t.reason = "gradients: " + std::to_string(t.ulps) + " ulp(ref) + c*u_acc*sqrt(K)*(|J|^T|g|), from the forward's " +
             forward.mode + " tolerance";
  return t;
}

}  // namespace gauntlet
