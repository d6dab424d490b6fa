// Strong zeros for the special-values gate: probing the reference with finite stand-ins for NaN and Inf.
#include "special_values_strong_zeros.h"

#include <chrono>
#include <cmath>

#include "gauntlet/common/wire.h"

namespace gauntlet::special_values {
namespace {

// Stand-ins for the non-finite special values, to see how an output depends on them (the
// reference with exact zeros made strong, 0 x NaN = 0 x inf = 0, is the limit of finite ones).
// Finite probes: every special at +-kSmall (its sign kept), then the NaNs at kLarge; both exact
// in every floating dtype down to float8 e4m3 (max 448). Infinite probes, in float64: the
// infinities at +-2^200, then +-2^300 (products of three still finite), NaNs at kSmall.
constexpr double kSmall = 0.375, kLarge = 384.0;
const double kHuge1 = std::ldexp(1.0, 200), kHuge2 = std::ldexp(1.0, 300);
// An output the infinities decide is at least this large at kHuge1 (one term times 2^200 and a
// coefficient of at least 2^-100); anything smaller is an accident of cancellation or a ratio.
const double kDominant = std::ldexp(1.0, 100);

// An output the infinities drive is a sum of products of them: its dominant part grows by
// 2^(100 d) from 2^200 to 2^300 for products of d of them, and is multiplied by (-1)^d when every
// infinity changes sign. This fraction of its size is what the lower-degree and finite rest may
// leave. A ratio or a log-sum-exp of them does not behave so (cross_entropy's inf - inf stays
// PyTorch's NaN; docs/tolerances.md).
constexpr double kFlipSlack = 1e-6;

}  // namespace

// The case's inputs with every NaN at `nan_value` and every infinity at +-`inf_magnitude` (as
// float64 when `to_double`, so that magnitudes past the dtype's range stay finite). A negative
// `inf_magnitude` gives every infinity the opposite sign.
std::vector<at::Tensor> with_nonfinite_replaced(const std::vector<at::Tensor>& inputs, double nan_value,
                                                double inf_magnitude, bool to_double) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : inputs) {
    if (!at::isFloatingType(t.scalar_type())) {
      out.push_back(t);
      continue;
    }
    // The oracles take any floating dtype, so float8 goes widened.
    const at::Tensor x = to_double ? t.to(at::kDouble) : wire::nan_testable(t);
    at::Tensor y = at::where(at::isnan(x), at::full({}, nan_value, x.options()), x);
    y = at::where(at::isinf(y), at::sign(y) * inf_magnitude, y);
    out.push_back(y);
  }
  return out;
}

// The reference with strong zeros, where the kernel's output is not NaN and the reference's is:
// a dense reference of a diagonal or triangular problem (torch.diag(a) @ b) multiplies special
// values by the structure's zeros and spreads NaN over outputs a kernel that uses the structure
// never touches. From four probes of the reference (the special values replaced as above):
// `small` every special at +-kSmall, `nan_large` the NaNs at kLarge, `huge1`/`huge2` the
// infinities at +-2^200/+-2^300, `flipped` huge1 with every infinity's sign changed. An output
// that moves with the NaNs' value keeps NaN; one that moves with neither takes its value without
// them; one the infinities drive (dominant, growing and flipping as a product of d of them, see
// kFlipSlack) becomes that infinity. Anything else keeps the reference's NaN. `accepted`: the
// elements changed.
at::Tensor strong_zero_reference(const at::Tensor& ref, const at::Tensor& got, const at::Tensor& small,
                                 const at::Tensor& nan_large, const at::Tensor& huge1, const at::Tensor& huge2,
                                 const at::Tensor& flipped, at::Tensor* accepted) {
  auto flat = [](const at::Tensor& t) { return t.to(at::kDouble).contiguous().reshape({-1}); };
  const at::Tensor r = flat(ref), o = flat(got), d = flat(small), b = flat(nan_large), h1 = flat(huge1),
                   h2 = flat(huge2);
  at::Tensor out = r.clone();
  at::Tensor mask = at::zeros({r.numel()}, at::kBool);
  const double *pr = r.data_ptr<double>(), *po = o.data_ptr<double>(), *pd = d.data_ptr<double>(),
               *pb = b.data_ptr<double>(), *p1 = h1.data_ptr<double>(), *p2 = h2.data_ptr<double>();
  const at::Tensor fl = flat(flipped);
  const double* pf = fl.data_ptr<double>();
  double* pout = out.data_ptr<double>();
  bool* pm = mask.data_ptr<bool>();
  for (int64_t e = 0; e < r.numel(); ++e) {
    if (!std::isnan(pr[e]) || std::isnan(po[e])) continue;
    if (!std::isfinite(pd[e]) || pd[e] != pb[e]) continue;  // the NaNs' value reaches it
    double value = NAN;
    if (std::isfinite(p1[e]) && p1[e] == p2[e] && p1[e] == pd[e]) {
      value = pd[e];  // no special value reaches it
    } else if (std::isfinite(p1[e]) && std::isfinite(p2[e]) && std::isfinite(pf[e]) && std::fabs(p1[e]) >= kDominant &&
               std::signbit(p1[e]) == std::signbit(p2[e])) {
      const double growth = std::log2(std::fabs(p2[e]) / std::fabs(p1[e])) / 100.0;
      const double degree = std::round(growth);
      const double expected_flip = std::fmod(degree, 2.0) == 0 ? p1[e] : -p1[e];
      if (degree >= 1 && std::fabs(growth - degree) <= 0.01 &&
          std::fabs(pf[e] - expected_flip) <= kFlipSlack * std::fabs(p1[e]))
        value = std::copysign(INFINITY, p1[e]);  // the infinities drive it
    }
    if (std::isnan(value)) continue;
    pout[e] = value;
    pm[e] = true;
  }
  if (accepted) *accepted = mask.view(ref.sizes());
  return out.view(ref.sizes());
}

std::optional<StrongZeroProbes> strong_zero_probes(GateContext& ctx, const CaseRun& run) {
  const auto t0 = std::chrono::steady_clock::now();
  auto oracle_of = [&](const std::vector<at::Tensor>& inputs) { return run_oracle(ctx.schema.oracle, inputs, run.c.attrs); };
  // A probe that would change nothing is the small one (at a problem's size each is a float64
  // reference of seconds): without NaNs the NaN probe, without infinities the three huge ones.
  bool nan = false, inf = false;
  for (const at::Tensor& t : run.inputs)
    if (t.defined() && at::isFloatingType(t.scalar_type()) && t.numel() > 0) {
      const at::Tensor v = wire::nan_testable(t);
      nan = nan || at::isnan(v).any().item<bool>();
      inf = inf || at::isinf(v).any().item<bool>();
    }
  StrongZeroProbes p;
  p.small = oracle_of(with_nonfinite_replaced(run.inputs, kSmall, kSmall, false));
  p.nan_large = nan ? oracle_of(with_nonfinite_replaced(run.inputs, kLarge, kSmall, false)) : p.small;
  p.huge1 = inf ? oracle_of(with_nonfinite_replaced(run.inputs, kSmall, kHuge1, true)) : p.small;
  p.huge2 = inf ? oracle_of(with_nonfinite_replaced(run.inputs, kSmall, kHuge2, true)) : p.small;
  p.flipped = inf ? oracle_of(with_nonfinite_replaced(run.inputs, kSmall, -kHuge1, true)) : p.small;
  const bool ok = p.small.ok() && p.nan_large.ok() && p.huge1.ok() && p.huge2.ok() && p.flipped.ok();
  ctx.timing.oracle += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ok) return std::nullopt;
  return p;
}

}  // namespace gauntlet::special_values
