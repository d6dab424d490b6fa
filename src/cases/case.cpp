// Test cases: distributions, materializing recipes into tensors, kernel arguments, digests, JSON.
#include "gauntlet/cases/case.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gauntlet/build/builder.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/common/rng.h"
#include "gauntlet/common/wire.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {
namespace {

const std::pair<Distribution, const char*> kDistNames[] = {
    {Distribution::Normal, "normal"},         {Distribution::Uniform, "uniform"},
    {Distribution::Small, "small"},           {Distribution::Large, "large"},
    {Distribution::OneSigned, "one-signed"},  {Distribution::HeavyTailed, "heavy-tailed"},
    {Distribution::Outliers, "outliers"},     {Distribution::Uniform01, "uniform01"},
    {Distribution::Index, "index"},
    {Distribution::Subnormal, "subnormal"},   {Distribution::NearMax, "near-max"},
    {Distribution::NearMinNormal, "near-min-normal"}, {Distribution::LargeLogits, "large-logits"},
    {Distribution::TinySpread, "tiny-spread"},
    {Distribution::Swamp, "swamp"},           {Distribution::Cancellation, "cancellation"},
    {Distribution::PartialOverflow, "partial-overflow"}, {Distribution::IntegerExact, "integer-exact"},
    {Distribution::NearEqual, "near-equal"},  {Distribution::LargeMean, "large-mean"},
    {Distribution::NearOne, "near-one"},     {Distribution::SmallIntegers, "small-integers"},
};

// Element k of row `row` (a line along the recipe's axis, of length K) of a row-structured
// distribution, already representable in the dtype.
double draw_along(Distribution d, DType dtype, uint64_t seed, uint64_t stream, uint64_t row, int64_t k, int64_t K) {
  const num::DTypeLimits lim = num::limits(dtype);
  const int precision = lim.mantissa_bits + 1;
  const double sign = rng::uniform01(seed, stream + 0x5000, row) < 0.5 ? -1.0 : 1.0;
  if (d == Distribution::Swamp) {
    // The large value first in even rows, somewhere in the first half in odd ones.
    const int64_t at = row % 2 ? int64_t(rng::below(seed, stream + 0x5100, row, uint64_t(std::max<int64_t>(1, K / 2)))) : 0;
    const double large = std::ldexp(1.0, 6 + int(rng::below(seed, stream + 0x5200, row, 4)));
    if (k == at) return sign * large;
    const int rung = int(row % 8);
    const double small = large * std::ldexp(1.0 + rng::uniform01(seed, stream, uint64_t(row * K + k)), -(precision + 1 + rung));
    return num::round_to(dtype, sign * small);
  }
  // Cancellation and PartialOverflow: v_m = magnitude*[1,2) in the first half, -v_m + delta at the mirrored
  // position K-1-m, delta a few ulps of v_m: the exact sum is the deltas'.
  double magnitude = std::ldexp(1.0, int(rng::below(seed, stream + 0x5200, row, 4)));
  if (d == Distribution::PartialOverflow) {
    // One-signed half sums to ~(K/2)*1.5*magnitude >= 3*max_finite; the exact result is ~sqrt(K) deltas.
    const double m = std::min(lim.max_finite / 4, lim.max_finite * 8 / double(std::max<int64_t>(K, 1)));
    magnitude = std::ldexp(1.0, std::ilogb(m));
  }
  auto first_half = [&](int64_t m) {
    return num::round_to(dtype, sign * magnitude * (1.0 + rng::uniform01(seed, stream, uint64_t(row * K + m))));
  };
  const int64_t half = K / 2;
  const double delta = magnitude * std::ldexp(rng::normal(seed, stream + 0x5300, uint64_t(row * K + k)), 2 - precision);
  if (k < half) return first_half(k);
  if (K % 2 && k == half) return num::round_to(dtype, delta);
  return num::round_to(dtype, -first_half(K - 1 - k) + delta);
}

// The distributions whose draw() uses rng::normal(seed, stream, i) (materialize draws those
// normals in bulk first).
bool draws_normal(Distribution d) {
  switch (d) {
    case Distribution::TinySpread: case Distribution::Normal: case Distribution::Small: case Distribution::Large:
    case Distribution::OneSigned: case Distribution::HeavyTailed: case Distribution::Outliers:
    case Distribution::LargeMean: return true;
    default: return false;
  }
}

// One element of a real distribution, before rounding to the dtype. `z`, where given, is
// rng::normal(seed, stream, i) already drawn.
double draw(Distribution d, DType dtype, uint64_t seed, uint64_t stream, uint64_t i, const double* z = nullptr) {
  auto gaussian = [&] { return z ? *z : rng::normal(seed, stream, i); };
  const num::DTypeLimits lim = dtype_is_floating(dtype) ? num::limits(dtype) : num::limits(DType::Float32);
  // Drawn only by the distributions that use it: a whole generator block per element (a quarter
  // of a normal draw's cost) that the others would throw away. The values are the same.
  auto sign = [&] { return rng::uniform01(seed, stream + 0x3000, i) < 0.5 ? -1.0 : 1.0; };
  switch (d) {
    case Distribution::Subnormal:
      // Uniform over the subnormal range's exponents (2^-k * min_normal), so tiny and near-normal
      // subnormals are equally likely.
      return sign() * lim.min_normal * std::ldexp(0.5 + 0.49 * rng::uniform01(seed, stream, i),
                                                -int(rng::below(seed, stream + 0x4000, i, uint64_t(lim.mantissa_bits))));
    case Distribution::NearMax:
      return sign() * lim.max_finite * (0.25 + 0.75 * rng::uniform01(seed, stream, i));
    case Distribution::NearMinNormal:
      return sign() * lim.min_normal * (0.5 + 3.5 * rng::uniform01(seed, stream, i));
    case Distribution::LargeLogits:
      return rng::uniform_pm1(seed, stream, i) * std::min(1e4, lim.max_finite / 4);
    case Distribution::TinySpread:
      return 1000.0 + gaussian() * 1e-3;
    case Distribution::Normal: return gaussian();
    case Distribution::Uniform: return rng::uniform_pm1(seed, stream, i);
    case Distribution::Small: return gaussian() * 1e-3;
    case Distribution::Large: return gaussian() * 1e3;
    case Distribution::OneSigned: return std::fabs(gaussian());
    case Distribution::HeavyTailed: {
      double u = rng::uniform01(seed, stream + 0x1000, i);
      return gaussian() / (u < 1e-3 ? 1e-3 : u);
    }
    case Distribution::Outliers: {
      const double g = gaussian();
      return rng::uniform01(seed, stream + 0x2000, i) < 0.01 ? g * 1e3 : g;
    }
    case Distribution::Uniform01: return rng::uniform01(seed, stream, i);
    case Distribution::Index: return 0;
    case Distribution::IntegerExact: return double(int64_t(rng::below(seed, stream, i, 24)) - 7);
    case Distribution::SmallIntegers: return double(rng::below(seed, stream, i, 4));
    case Distribution::NearEqual: return rng::uniform_pm1(seed, stream, i) / 8;
    case Distribution::LargeMean: return 256.0 + gaussian();
    case Distribution::NearOne: return 1.0 + rng::uniform01(seed, stream, i);
    case Distribution::Swamp:
    case Distribution::Cancellation:
    case Distribution::PartialOverflow: return 0;  // drawn along the axis (draw_along)
  }
  return 0;
}

// A floating recipe's values with ties (TensorRecipe::ties): a pool of max(1, n/4) draws of the
// distribution, rounded to the dtype and sorted ascending, so ascending pool positions are
// ascending values; with 4 or more, two of them are +0.0 and -0.0 (equal, as a sort must treat
// them; magnitudes only: both +0.0). Element i is the pool value at a position spread as `ties`
// (integer_spread.h over [0, pool); "reverse_runs" is "sorted_runs" backwards).
std::vector<double> tied_values(const TensorRecipe& r, int64_t n) {
  const int64_t pool = std::max<int64_t>(1, n / 4);
  std::vector<double> v(static_cast<size_t>(pool));
  for (int64_t k = 0; k < pool; ++k) {
    const double x = draw(r.distribution, r.dtype, r.seed, r.stream, uint64_t(k));
    v[size_t(k)] = num::round_to(r.dtype, r.positive ? std::fabs(x) : x);
  }
  if (pool >= 4) v[0] = 0.0, v[1] = r.positive ? 0.0 : -0.0;
  std::stable_sort(v.begin(), v.end(), [](double a, double b) { return a < b; });
  const bool reverse = r.ties == "reverse_runs";
  const Spread spread = reverse ? Spread::SortedRuns : spread_from_name(r.ties).value_or(Spread::Uniform);
  std::vector<int64_t> at = draw_keys(n, 0, pool, spread, r.alpha, false, r.seed, r.stream + 0x7000);
  if (reverse) std::reverse(at.begin(), at.end());
  std::vector<double> out(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = v[size_t(at[size_t(i)])];
  return out;
}

}  // namespace

bool distribution_uses_axis(Distribution d) {
  return d == Distribution::Swamp || d == Distribution::Cancellation || d == Distribution::PartialOverflow;
}

const char* distribution_name(Distribution d) {
  for (auto& [k, n] : kDistNames)
    if (k == d) return n;
  return "?";
}

bool distribution_from_name(const std::string& n, Distribution* d) {
  for (auto& [k, name] : kDistNames)
    if (n == name) return (*d = k, true);
  return false;
}

std::vector<Distribution> accuracy_distributions() {
  return {Distribution::Normal,    Distribution::Uniform,     Distribution::Small, Distribution::Large,
          Distribution::OneSigned, Distribution::HeavyTailed, Distribution::Outliers};
}

double quantizer_grid_value(const TensorRecipe& r, uint64_t i, double v) {
  const double s = r.grid_scale;
  const double span = double(std::max<int64_t>(1, r.high - r.low));
  if (r.distribution == Distribution::Uniform01) return v * span / 4 * s;
  const double role = rng::uniform01(r.seed, r.stream + 0x6000, i);
  const double sign = rng::uniform01(r.seed, r.stream + 0x6100, i) < 0.5 ? -1.0 : 1.0;
  if (role < 0.5) return v * span / 4 * s;
  if (role < 0.75) {
    // x / scale = k + 0.5 with k + zero_point from low - 1 to high - 1: every boundary of the
    // unsaturated range and the two just past its ends.
    const int64_t k = r.low - 1 - r.grid_zero_point + int64_t(rng::below(r.seed, r.stream + 0x6200, i, uint64_t(span) + 1));
    const double tie = num::round_to(r.dtype, (double(k) + 0.5) * s);
    if (role < 0.6 || tie == 0 || !std::isfinite(tie)) return tie;
    // One ulp of the dtype above or below the boundary (bit patterns are sign-magnitude).
    const uint64_t bits = num::to_bits(r.dtype, tie);
    return num::from_bits(r.dtype, role < 0.675 ? bits + 1 : bits - 1);
  }
  if (role < 0.92) return sign * span * (0.5 + 4 * rng::uniform01(r.seed, r.stream + 0x6300, i)) * s;
  const num::DTypeLimits lim = num::limits(dtype_is_floating(r.dtype) ? r.dtype : DType::Float32);
  return sign * lim.max_finite * (0.25 + 0.75 * rng::uniform01(r.seed, r.stream + 0x6300, i));
}

// Elements per parallel chunk when materializing: small tensors stay on one thread, the timing
// gate's GPU inputs (tens of millions of elements) use every core of the host.
constexpr int64_t kMaterializeGrain = int64_t(1) << 16;

// Projecting after the draw keeps every other value's stream unchanged, and placed specials that
// fall on a structural zero vanish, as get_inputs() itself would never put them there.
at::Tensor with_structure(const at::Tensor& t, const std::string& structure) {
  if (structure.empty() || t.dim() < 2) return t;
  if (structure == "lower-triangular") return t.tril().contiguous();
  if (structure == "upper-triangular") return t.triu().contiguous();
  if (structure == "diagonal") return t.tril().triu().contiguous();
  if (structure == "symmetric" && t.size(-1) == t.size(-2))
    return (t.tril() + t.tril(-1).transpose(-2, -1)).contiguous();
  return t;
}

bool structure_keeps(const TensorRecipe& r, int64_t flat) {
  const size_t rank = r.shape.size();
  if (r.structure.empty() || rank < 2) return true;
  const int64_t cols = r.shape[rank - 1], rows = r.shape[rank - 2];
  if (cols == 0 || rows == 0) return true;
  const int64_t col = flat % cols, row = (flat / cols) % rows;
  if (r.structure == "lower-triangular") return col <= row;
  if (r.structure == "upper-triangular") return col >= row;
  if (r.structure == "diagonal") return col == row;
  if (r.structure == "symmetric") return rows != cols || col <= row;
  return true;
}

int64_t structure_position(const TensorRecipe& r, int64_t flat) {
  if (structure_keeps(r, flat)) return flat;
  const size_t rank = r.shape.size();
  const int64_t cols = r.shape[rank - 1], rows = r.shape[rank - 2];
  const int64_t col = flat % cols, row = (flat / cols) % rows, base = flat - (row * cols + col);
  if (r.structure != "diagonal" && col < rows && row < cols) return base + col * cols + row;
  const int64_t d = std::min(row, col);
  return base + d * cols + d;
}

at::Tensor materialize(const TensorRecipe& r) {
  // CaseSpace draws no case dtype this LibTorch lacks and why_not_runnable_here stops a kernel that
  // needs one; reaching here with such a dtype is gauntlet's own slip, said as such.
  if (const std::string why = wire::dtype_unavailable(r.dtype); !why.empty())
    throw std::runtime_error("cannot make input " + r.name + ": " + why);
  int64_t n = 1;
  for (int64_t s : r.shape) n *= s;
  if (r.distribution == Distribution::Index || !dtype_is_floating(r.dtype)) {
    at::Tensor t = at::empty({n}, at::kLong);
    int64_t* p = t.data_ptr<int64_t>();
    const uint64_t span = uint64_t(std::max<int64_t>(1, r.high - r.low));
    if (r.offsets || r.spread != Spread::Uniform || r.sorted) {
      // Keys and offsets depend on each other's positions (runs, sorting, sums): drawn whole.
      const std::vector<int64_t> v = r.offsets ? draw_offsets(n, r.high, r.spread, r.alpha, r.seed, r.stream)
                                               : draw_keys(n, r.low, r.high, r.spread, r.alpha, r.sorted, r.seed, r.stream);
      std::copy(v.begin(), v.end(), p);
    } else {
      // Each element is a pure function of (seed, stream, index): filled in parallel, same bytes.
      at::parallel_for(0, n, kMaterializeGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) p[i] = r.low + int64_t(rng::below(r.seed, r.stream, uint64_t(i), span));
      });
    }
    // Pinned indices (the provenance gate's single-element changes), kept inside [low, high).
    for (const auto& [index, value] : r.specials)
      if (index >= 0 && index < n) p[index] = std::clamp(int64_t(value), r.low, std::max(r.low, r.high - 1));
    at::Tensor out = t.view(r.shape);
    if (r.dtype != DType::Int64) out = out.to(*wire::to_scalar_type(r.dtype));
    // Index tensors take their layout too (the schemas allow strided, offset and expanded indices).
    return apply_layout(out.contiguous(), r.layout);
  }
  // float32 and float64 values are written in their own dtype at once (each value is exact in it,
  // and the conversion is the static_cast that Tensor::to would apply): for tensors of tens of
  // millions of elements a float64 staging buffer and its copy cost as much as the drawing.
  // float16 and bfloat16 go through float64 and ATen's conversion.
  const bool direct = r.dtype == DType::Float32 || r.dtype == DType::Float64;
  at::Tensor t = at::empty({n}, direct ? *wire::to_scalar_type(r.dtype) : at::kDouble);
  double* p = r.dtype == DType::Float32 ? nullptr : t.data_ptr<double>();
  float* p32 = r.dtype == DType::Float32 ? t.data_ptr<float>() : nullptr;
  auto put = [&](int64_t i, double representable) {
    if (p32) p32[i] = static_cast<float>(representable);
    else p[i] = representable;
  };
  // Row-structured distributions: element i is (row, k) with k its position along the axis.
  const int64_t rank = int64_t(r.shape.size());
  const bool along = distribution_uses_axis(r.distribution) && rank > 0;
  const int64_t axis = along ? ((r.axis % rank) + rank) % rank : 0;
  int64_t K = 1, inner = 1;
  if (along) {
    K = r.shape[size_t(axis)];
    for (int64_t a = axis + 1; a < rank; ++a) inner *= r.shape[size_t(a)];
  }
  const bool tied = !along && !r.ties.empty();
  const std::vector<double> tie_values = tied ? tied_values(r, n) : std::vector<double>();
  const bool bulk_normal = !along && !tied && draws_normal(r.distribution);
  at::parallel_for(0, n, kMaterializeGrain, [&](int64_t begin, int64_t end) {
    if (tied) {
      for (int64_t i = begin; i < end; ++i) put(i, tie_values[size_t(i)]);
      return;
    }
    std::vector<double> z;
    if (bulk_normal) {
      z.resize(size_t(end - begin));
      rng::normal_fill(r.seed, r.stream, uint64_t(begin), end - begin, z.data());
    }
    for (int64_t i = begin; i < end; ++i) {
      double v = along ? draw_along(r.distribution, r.dtype, r.seed, r.stream,
                                    uint64_t((i / (inner * K)) * inner + i % inner), (i / inner) % K, K)
                       : draw(r.distribution, r.dtype, r.seed, r.stream, uint64_t(i),
                              bulk_normal ? &z[size_t(i - begin)] : nullptr);
      if (r.positive) v = std::fabs(v);
      if (r.grid_scale > 0) v = quantizer_grid_value(r, uint64_t(i), v);
      put(i, num::round_to(r.dtype, v));  // exact in the dtype: the cast changes nothing
    }
  });
  for (const auto& [index, value] : r.specials)
    if (index >= 0 && index < n) put(index, num::round_to(r.dtype, value));
  at::Tensor logical = direct ? t.view(r.shape) : t.view(r.shape).to(*wire::to_scalar_type(r.dtype)).contiguous();
  return apply_layout(with_structure(logical, r.structure), r.layout);
}

double recipe_value(const TensorRecipe& r, int64_t flat) {
  for (auto it = r.specials.rbegin(); it != r.specials.rend(); ++it)
    if (it->first == flat) return num::round_to(r.dtype, it->second);
  int64_t n = 1;
  for (int64_t s : r.shape) n *= s;
  const int64_t rank = int64_t(r.shape.size());
  if (distribution_uses_axis(r.distribution) && rank > 0) {
    const int64_t axis = ((r.axis % rank) + rank) % rank;
    int64_t inner = 1;
    for (int64_t a = axis + 1; a < rank; ++a) inner *= r.shape[size_t(a)];
    const int64_t K = r.shape[size_t(axis)];
    const double v = draw_along(r.distribution, r.dtype, r.seed, r.stream,
                                uint64_t((flat / (inner * K)) * inner + flat % inner), (flat / inner) % K, K);
    return num::round_to(r.dtype, r.positive ? std::fabs(v) : v);
  }
  if (!r.ties.empty()) return tied_values(r, n).at(size_t(flat));
  const double v = draw(r.distribution, r.dtype, r.seed, r.stream, uint64_t(flat));
  return num::round_to(r.dtype, r.positive ? std::fabs(v) : v);
}

at::Tensor apply_layout(const at::Tensor& logical, const std::string& layout) {
  const int64_t rank = logical.dim();
  if (layout == "contiguous" || rank == 0) return logical;
  if (layout == "transposed" && rank >= 2)
    return logical.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (layout == "channels_last" && rank == 4) return logical.contiguous(at::MemoryFormat::ChannelsLast);
  // Gaps and prefixes hold NaN (or -1 for integers): a stride-blind kernel reads garbage, visibly.
  const bool floating = at::isFloatingType(logical.scalar_type());
  if (layout == "strided") {
    std::vector<int64_t> wide(logical.sizes().begin(), logical.sizes().end());
    wide.back() *= 2;
    at::Tensor storage = at::full(wide, floating ? NAN : -1.0, logical.options());
    at::Tensor view = storage.slice(rank - 1, 0, wide.back(), 2);
    view.copy_(logical);
    return view;
  }
  if (layout == "offset") {
    const int64_t pad = 7;
    at::Tensor storage = at::full({logical.numel() + pad}, floating ? NAN : -1.0, logical.options());
    storage.slice(0, 0, pad).fill_(floating ? NAN : -1.0);
    at::Tensor view = storage.as_strided(logical.sizes(), logical.contiguous().strides(), pad);
    view.copy_(logical);
    return view;
  }
  if (layout == "expanded" && logical.size(0) > 0) {
    // Stride 0 along dim 0: every row is the first row.
    return logical.narrow(0, 0, 1).expand(logical.sizes());
  }
  return logical;
}

std::vector<at::Tensor> materialize_all(const Case& c) {
  std::vector<at::Tensor> out;
  for (const TensorRecipe& r : c.tensors) out.push_back(materialize(r));
  return out;
}

const TensorRecipe& case_recipe(const OpSchema& schema, const Case& c) {
  if (const InputSpec* in = schema.case_dtype_input())
    for (const TensorRecipe& r : c.tensors)
      if (r.name == in->name) return r;
  return c.tensors.at(0);
}

DType case_dtype(const OpSchema& schema, const Case& c) {
  return c.tensors.empty() ? DType::Float32 : case_recipe(schema, c).dtype;
}

std::vector<wire::Arg> make_args(const OpSchema& schema, const std::vector<at::Tensor>& tensors,
                                 const AttrMap& attrs) {
  std::vector<wire::Arg> args;
  for (const at::Tensor& t : tensors) {
    wire::Arg a;
    a.tensor = t;
    args.push_back(a);
  }
  for (const AttrSpec& spec : schema.attributes) {
    AttrValue v = spec.default_value;
    auto it = attrs.find(spec.name);
    if (it != attrs.end()) v = it->second;
    wire::Arg a;
    if (spec.type == "double") {
      a.kind = wire::Arg::Kind::Double;
      a.d = std::holds_alternative<double>(v) ? std::get<double>(v)
            : std::holds_alternative<int64_t>(v) ? double(std::get<int64_t>(v)) : double(std::get<bool>(v));
    } else if (spec.type == "bool") {
      a.kind = wire::Arg::Kind::Bool;
      a.b = std::holds_alternative<bool>(v) ? std::get<bool>(v)
            : std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) != 0 : std::get<double>(v) != 0;
    } else {
      a.kind = wire::Arg::Kind::Int;
      a.i = std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v)
            : std::holds_alternative<bool>(v) ? int64_t(std::get<bool>(v)) : int64_t(std::get<double>(v));
    }
    args.push_back(a);
  }
  return args;
}


nlohmann::json case_to_json(const Case& c) {
  nlohmann::json j;
  j["index"] = c.index;
  j["label"] = c.label;
  j["dims"] = c.dims;
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorRecipe& r : c.tensors) {
    nlohmann::json t;
    t["name"] = r.name;
    t["dtype"] = dtype_name(r.dtype);
    t["shape"] = r.shape;
    t["distribution"] = distribution_name(r.distribution);
    if (r.distribution == Distribution::Index) t["range"] = {r.low, r.high};
    if (r.spread != Spread::Uniform) t["spread"] = spread_name(r.spread);
    if (r.spread == Spread::Zipf) t["alpha"] = r.alpha;
    if (r.sorted) t["sorted"] = true;
    if (r.offsets) t["offsets"] = true;
    if (r.positive) t["positive"] = true;
    if (!r.ties.empty()) t["ties"] = r.ties;
    if (!r.ties.empty() && r.ties == "zipf") t["alpha"] = r.alpha;
    if (!r.structure.empty()) t["structure"] = r.structure;
    if (r.grid_scale > 0) t["grid"] = {{"scale", r.grid_scale}, {"zero_point", r.grid_zero_point}, {"range", {r.low, r.high}}};
    if (r.layout != "contiguous") t["layout"] = r.layout;
    if (distribution_uses_axis(r.distribution)) t["axis"] = r.axis;
    if (!r.specials.empty()) {
      nlohmann::json sp = nlohmann::json::array();
      for (const auto& [index, value] : r.specials) {
        // JSON has no NaN/Inf: special values are written as text.
        std::string text = std::isnan(value) ? "nan" : std::isinf(value) ? (value > 0 ? "inf" : "-inf") : "";
        if (text.empty()) sp.push_back({index, value});
        else sp.push_back({index, text});
      }
      t["specials"] = sp;
    }
    t["seed"] = r.seed;
    t["stream"] = r.stream;
    tensors.push_back(t);
  }
  j["tensors"] = tensors;
  nlohmann::json attrs = nlohmann::json::object();
  for (const auto& [k, v] : c.attrs)
    std::visit([&](auto x) { attrs[k] = x; }, v);
  j["attrs"] = attrs;
  if (!c.outside_contract.empty()) j["outside_contract"] = c.outside_contract;
  j["generator"] = "philox4x32-10/gauntlet-v1";
  return j;
}

bool case_from_json(const nlohmann::json& j, Case* c, std::string* error) {
  try {
    c->index = j.at("index").get<uint64_t>();
    c->label = j.value("label", "");
    c->dims = j.at("dims").get<std::map<std::string, int64_t>>();
    c->outside_contract = j.value("outside_contract", "");
    if (j.value("generator", "") != "philox4x32-10/gauntlet-v1")
      return (*error = "case uses an unknown generator", false);
    for (const auto& t : j.at("tensors")) {
      TensorRecipe r;
      r.name = t.at("name");
      auto dt = dtype_from_name(t.at("dtype").get<std::string>());
      if (!dt) return (*error = "case tensor has an unknown dtype", false);
      r.dtype = *dt;
      r.shape = t.at("shape").get<std::vector<int64_t>>();
      for (int64_t s : r.shape)
        if (s < 0 || s > (int64_t(1) << 34)) return (*error = "case tensor has an invalid shape", false);
      if (!distribution_from_name(t.at("distribution").get<std::string>(), &r.distribution))
        return (*error = "case tensor has an unknown distribution", false);
      if (t.contains("range")) {
        r.low = t["range"].at(0);
        r.high = t["range"].at(1);
      }
      r.positive = t.value("positive", false);
      r.ties = t.value("ties", "");
      if (!r.ties.empty() && !is_tie_spread_name(r.ties))
        return (*error = "case tensor has an unknown tie spread " + r.ties, false);
      const auto spread = spread_from_name(t.value("spread", ""));
      if (!spread) return (*error = "case tensor has an unknown spread " + t.value("spread", ""), false);
      r.spread = *spread;
      r.alpha = t.value("alpha", 0.0);
      r.sorted = t.value("sorted", false);
      r.offsets = t.value("offsets", false);
      r.structure = t.value("structure", "");
      if (t.contains("grid")) {
        const auto& g = t["grid"];
        r.grid_scale = g.at("scale").get<double>();
        r.grid_zero_point = g.at("zero_point").get<int64_t>();
        r.low = g.at("range").at(0).get<int64_t>();
        r.high = g.at("range").at(1).get<int64_t>();
        if (!(r.grid_scale > 0) || !std::isfinite(r.grid_scale)) return (*error = "case tensor has an invalid grid scale", false);
      }
      if (!r.structure.empty() && !is_structure_name(r.structure))
        return (*error = "case tensor has an unknown structure " + r.structure, false);
      r.layout = t.value("layout", "contiguous");
      r.axis = t.value("axis", int64_t(-1));
      if (!is_layout_name(r.layout))
        return (*error = "case tensor has an unknown layout " + r.layout, false);
      if (t.contains("specials")) {
        for (const auto& e : t["specials"]) {
          const int64_t index = e.at(0).get<int64_t>();
          double value = 0;
          if (e.at(1).is_string()) {
            const std::string v = e.at(1);
            if (v == "nan") value = NAN;
            else if (v == "inf") value = INFINITY;
            else if (v == "-inf") value = -INFINITY;
            else return (*error = "case special value '" + v + "' is not nan, inf or -inf", false);
          } else {
            value = e.at(1).get<double>();
          }
          r.specials.push_back({index, value});
        }
      }
      r.seed = t.at("seed");
      r.stream = t.at("stream");
      c->tensors.push_back(r);
    }
    for (auto it = j.at("attrs").begin(); it != j.at("attrs").end(); ++it) {
      const auto& v = it.value();
      if (v.is_boolean()) c->attrs[it.key()] = v.get<bool>();
      else if (v.is_number_integer()) c->attrs[it.key()] = v.get<int64_t>();
      else if (v.is_number()) c->attrs[it.key()] = v.get<double>();
      else return (*error = "case attribute " + it.key() + " is not a number or bool", false);
    }
  } catch (const nlohmann::json::exception& e) {
    return (*error = std::string("malformed case: ") + e.what(), false);
  }
  return true;
}

}  // namespace gauntlet
