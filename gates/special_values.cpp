// Gate 3, special-values: NaN/Inf at random and adversarial positions; output NaN/Inf as the oracle's.
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <optional>
#include <tuple>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/oracle/oracle.h"
#include "gauntlet/cases/property.h"

namespace gauntlet {

// --- Case shapes drawn inside a RapidCheck property; gates/subnormals.cpp uses them as well. ---
namespace gate_cases {

namespace {

// Above this many FLOPs (the schema's cost model) or this many input elements (each drawn by the
// counter-based generator), a case is cut down: the fp64 oracle, the generator and the kernel must
// stay in the millisecond range so that a gate takes well under half a second per kernel at
// budget 1.
constexpr int64_t kMaxWork = int64_t(1) << 21;
constexpr int64_t kMaxElements = int64_t(1) << 16;

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// FLOPs of the case from the schema's cost model; without one, the product of the case's dims.
int64_t work_of(const OpSchema& schema, const Case& c) {
  if (!schema.flops.empty())
    if (auto f = eval_case_expr(schema.flops, c)) return *f;
  int64_t w = 1;
  for (const auto& [name, size] : c.dims) w = std::min<int64_t>(w * std::max<int64_t>(1, size), int64_t(1) << 40);
  return w;
}

}  // namespace

std::vector<int64_t> dim_candidates(const CaseSpace& space, const std::string& dim, bool tiny) {
  auto [lo, hi] = space.limits_for(dim);
  lo = std::max<int64_t>(lo, 1);  // zero-size dims belong to the shapes gate
  // The smallest size first (what shrinking lands on), optionally the next two, then the typical
  // sizes (the large ones, 768, 1000, 4097, hold the tile edges at 8..128). Tile-boundary and odd
  // sizes are the shapes gate's business: a kernel that fails only there is reported by it.
  std::vector<int64_t> out = {lo};
  if (tiny) out.insert(out.end(), {lo + 1, lo + 2});
  for (int64_t s : space.sizes_for(dim)) out.push_back(s);
  out.erase(std::remove_if(out.begin(), out.end(), [&](int64_t s) { return s < lo || s > hi; }), out.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t pick_uniform(int64_t n) {
  // pick_index's range grows with RapidCheck's size (small first), right for sizes but it would
  // make the last dtypes and choices rare; a fixed size keeps categorical choices uniform while
  // they still shrink toward the first.
  return n <= 1 ? 0 : *rc::gen::resize(100, rc::gen::inRange<int64_t>(0, n));
}

// Builds the case; when the schema's constraints reject the drawn dims (conv2d's kernel larger than
// its input), dims are set to their smallest candidate one at a time, in name order, until they fit.
static bool build_fitting(const CaseSpace& space, std::map<std::string, int64_t> dims, size_t alt,
                          const AttrMap& attrs, DType dtype, Distribution dist, uint64_t seed, Case* out) {
  std::string error;
  if (space.build(dims, alt, attrs, dtype, dist, seed, out, &error)) return true;
  for (auto& [name, size] : dims) {
    const auto cands = dim_candidates(space, name, false);
    if (!cands.empty()) size = cands.front();
    if (space.build(dims, alt, attrs, dtype, dist, seed, out, &error)) return true;
  }
  return false;
}

Case draw_shaped_case(const CaseSpace& space, DType dtype, Distribution dist, uint64_t seed, bool tiny,
                      bool uniform_dims) {
  const OpSchema& schema = space.schema();
  const size_t nalt = schema.inputs.empty() ? 1 : std::max<size_t>(1, schema.inputs[0].shapes.size());
  const size_t alt = size_t(pick_uniform(int64_t(nalt)));
  std::map<std::string, int64_t> dims;
  if (uniform_dims) {
    // Every candidate equally likely from the first case on (still shrinking toward the smallest).
    for (const auto& [name, domain] : schema.dims) {
      const std::vector<int64_t> cands = dim_candidates(space, name, tiny);
      dims[name] = cands.empty() ? space.limits_for(name).first : cands[size_t(pick_uniform(int64_t(cands.size())))];
    }
  } else {
    dims = pick_dims(space, [&](const std::string& d) { return dim_candidates(space, d, tiny); });
  }
  // Attributes as CaseSpace chooses them: the manifest's fixed values, else one of the schema's
  // listed values, else the default; dim attributes are drawn below once the rank is known.
  AttrMap attrs;
  for (const AttrSpec& a : schema.attributes) {
    auto fixed = space.manifest().attrs.find(a.name);
    if (fixed != space.manifest().attrs.end()) attrs[a.name] = fixed->second;
    else if (!a.values.empty()) attrs[a.name] = a.values[size_t(pick_uniform(int64_t(a.values.size())))];
    else attrs[a.name] = a.default_value;
  }
  // Cut oversized cases down, largest dim first, to its next smaller candidate.
  Case c;
  for (int guard = 0;; ++guard) {
    if (!build_fitting(space, dims, alt, attrs, dtype, dist, seed, &c)) {
      // No drawn combination fits: fall back to the schema's first typical case (still valid).
      std::string error;
      if (!space.typical_case(0, dtype, dist, seed, &c, &error)) RC_DISCARD("no valid case: " + error);
      return c;
    }
    dims = c.dims;
    int64_t elements = 0;
    for (const TensorRecipe& r : c.tensors) elements += numel_of(r.shape);
    if (guard >= 256 || (work_of(schema, c) <= kMaxWork && elements <= kMaxElements)) break;
    std::string biggest;
    int64_t next = 0;
    for (const auto& [d, size] : dims) {
      int64_t smaller = 0;
      for (int64_t s : dim_candidates(space, d, tiny))
        if (s < size) smaller = s;
      if (smaller > 0 && (biggest.empty() || size > dims[biggest])) biggest = d, next = smaller;
    }
    if (biggest.empty()) break;
    dims[biggest] = next;
  }
  bool has_dim_attr = false;
  for (const AttrSpec& a : schema.attributes) {
    if (a.dim_of.empty() || space.manifest().attrs.count(a.name)) continue;
    for (const TensorRecipe& r : c.tensors)
      if (r.name == a.dim_of && !r.shape.empty()) {
        const int64_t rank = int64_t(r.shape.size());
        const int64_t k = pick_uniform(rank + 1);  // -1 first (the usual last dim), then 0..rank-1
        attrs[a.name] = k == 0 ? int64_t(-1) : k - 1;
        has_dim_attr = true;
      }
  }
  if (has_dim_attr) build_fitting(space, c.dims, alt, attrs, dtype, dist, seed, &c);  // relabels
  return c;
}

// The dim of `input` that the op reduces over (its dim attribute), or -1.
int64_t reduced_axis(const OpSchema& schema, const Case& c, const TensorRecipe& input) {
  if (!schema.reduction || schema.reduction->dim_attr.empty()) return -1;
  const AttrSpec* a = schema.attribute(schema.reduction->dim_attr);
  if (!a || a->dim_of != input.name) return -1;
  auto it = c.attrs.find(a->name);
  if (it == c.attrs.end() || !std::holds_alternative<int64_t>(it->second)) return -1;
  const int64_t rank = int64_t(input.shape.size()), d = std::get<int64_t>(it->second);
  if (rank == 0 || d < -rank || d >= rank) return -1;
  return d < 0 ? d + rank : d;
}

}  // namespace gate_cases

// --- Where special values go (exposed for tests/gates/special_values_test.cpp). ---
namespace special_values {


enum class Where : int64_t {
  First = 0,    // element 0
  Last,         // the last element
  Random,       // any element
  TileEdge,     // k*T - 1, k*T or k*T + 1 for a tile T in 8..128, in flat order or along the last dim
  Row,          // a whole slice along the last dim
  Line,         // a whole slice along `axis` (the reduced dim, else dim 0)
  Count,
};

const char* where_name(Where w) {
  switch (w) {
    case Where::First: return "first element";
    case Where::Last: return "last element";
    case Where::Random: return "element";
    case Where::TileEdge: return "tile edge";
    case Where::Row: return "row";
    case Where::Line: return "line along the reduced dim";
    default: return "?";
  }
}

// Flat logical indices of one placement in a tensor of `shape`; `a` and `b` are the drawn
// parameters (0 is the simplest choice: RapidCheck shrinks toward it). *what describes the spot.
std::vector<int64_t> placement_indices(const std::vector<int64_t>& shape, Where where, int64_t axis, uint64_t a,
                                       uint64_t b, std::string* what) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (n <= 0) return {};
  const int64_t last = shape.empty() ? 1 : shape.back();
  const int64_t rows = last > 0 ? n / last : 0;
  auto at = [&](int64_t flat) {
    if (what) *what = std::string(where_name(where)) + " " + index_text(shape, flat);
    return std::vector<int64_t>{flat};
  };
  switch (where) {
    case Where::First: return at(0);
    case Where::Last: return at(n - 1);
    case Where::Random: return at(int64_t(a % uint64_t(n)));
    case Where::TileEdge: {
      static const int64_t tiles[] = {8, 16, 32, 64, 128};
      const bool along_row = (b / 3) % 2 == 1 && last >= 8;
      const int64_t extent = along_row ? last : n;
      size_t t = size_t(a % 5);
      while (t > 0 && tiles[t] > extent) --t;  // the largest tile no bigger than the extent
      const int64_t T = tiles[t];
      if (T > extent) return at(n - 1);  // too small for any tile: its end is the only edge
      const int64_t kmax = extent / T;
      const int64_t k = 1 + int64_t((a / 5) % uint64_t(kmax));
      const int64_t off = int64_t(b % 3) - 1;
      const int64_t pos = std::clamp<int64_t>(k * T + off, 0, extent - 1);
      const int64_t row = along_row ? int64_t((b / 6) % uint64_t(rows)) : 0;
      const int64_t flat = along_row ? row * last + pos : pos;
      if (what)
        *what = "tile edge " + std::to_string(k) + "*" + std::to_string(T) + (off < 0 ? "-1" : off > 0 ? "+1" : "") +
                (along_row ? " along the last dim " : " (flat) ") + index_text(shape, flat);
      return {flat};
    }
    case Where::Row: {
      const int64_t r = int64_t(a % uint64_t(std::max<int64_t>(1, rows)));
      std::vector<int64_t> out;
      for (int64_t j = 0; j < last; ++j) out.push_back(r * last + j);
      if (what) {
        std::string t = index_text(shape, r * last);
        if (!shape.empty()) t = t.substr(0, t.rfind(',') == std::string::npos ? 1 : t.rfind(',') + 1) + "*]";
        *what = "row " + t;
      }
      return out;
    }
    case Where::Line: {
      const int64_t rank = int64_t(shape.size());
      const int64_t ax = rank == 0 ? 0 : std::clamp<int64_t>(axis, 0, rank - 1);
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < ax; ++d) outer *= shape[size_t(d)];
      for (int64_t d = ax + 1; d < rank; ++d) inner *= shape[size_t(d)];
      const int64_t len = rank == 0 ? 1 : shape[size_t(ax)];
      const int64_t lines = outer * inner;
      const int64_t l = int64_t(a % uint64_t(std::max<int64_t>(1, lines)));
      const int64_t o = l / inner, i = l % inner;
      std::vector<int64_t> out;
      for (int64_t j = 0; j < len; ++j) out.push_back(o * len * inner + j * inner + i);
      if (what) *what = "line along dim " + std::to_string(ax) + " through " + index_text(shape, out.front());
      return out;
    }
    default: return {};
  }
}

double special_value(int64_t kind) {
  return kind == 0 ? NAN : kind == 1 ? INFINITY : -INFINITY;
}

const char* special_name(int64_t kind) { return kind == 0 ? "nan" : kind == 1 ? "+inf" : "-inf"; }

// Draws a case with special values (inside a RapidCheck property): value seed, dtype, a list of
// 1..6 placements, each (input, value, kind of position, two position parameters), then shape and
// attributes. RapidCheck shrinks what was drawn first first, a list by dropping any of its
// elements, and each field toward 0 (the first input, NaN, the first element): a failure shrinks
// to the fewest, plainest special values, then to the smallest shape that still fails with them
// (positions are taken modulo the shape, so they stay valid as it shrinks).
Case draw_case(const CaseSpace& space) {
  const uint64_t seed = pick_seed();
  const auto& dtypes = space.dtypes();
  const DType dtype = dtypes[size_t(gate_cases::pick_uniform(int64_t(dtypes.size())))];
  int64_t nfloat = 0;
  for (const InputSpec& in : space.schema().inputs)
    if (in.values.kind == "real" || in.values.kind == "positive" || in.values.kind == "nonnegative") ++nfloat;
  using Placement = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;
  // The list's length comes from the size (resized to at most 6); its elements are drawn at full
  // size so that every input, value and position is as likely as any other.
  const int64_t big = int64_t(1) << 30;
  const auto placement = rc::gen::resize(
      100, rc::gen::tuple(rc::gen::inRange<int64_t>(0, std::max<int64_t>(1, nfloat)), rc::gen::inRange<int64_t>(0, 3),
                          rc::gen::inRange<int64_t>(0, int64_t(Where::Count)), rc::gen::inRange<int64_t>(0, big),
                          rc::gen::inRange<int64_t>(0, big)));
  const std::vector<Placement> placements =
      *rc::gen::resize(6, rc::gen::nonEmpty(rc::gen::container<std::vector<Placement>>(placement)));
  Case c = gate_cases::draw_shaped_case(space, dtype, Distribution::Normal, seed, /*tiny=*/false,
                                        /*uniform_dims=*/false);
  std::vector<size_t> floating;
  for (size_t i = 0; i < c.tensors.size(); ++i)
    if (c.tensors[i].distribution != Distribution::Index && dtype_is_floating(c.tensors[i].dtype))
      floating.push_back(i);
  std::vector<std::map<int64_t, double>> placed(c.tensors.size());
  std::string described;
  for (const auto& [t, kind, where, a, b] : placements) {
    if (floating.empty()) break;
    const size_t ti = floating[size_t(t) % floating.size()];
    TensorRecipe& r = c.tensors[ti];
    std::string what;
    const auto idx = placement_indices(r.shape, Where(where), gate_cases::reduced_axis(space.schema(), c, r),
                                       uint64_t(a), uint64_t(b), &what);
    // A position the input's structure zeroes would not hold the value (get_inputs() never puts one there).
    std::vector<int64_t> kept;
    for (int64_t i : idx)
      if (structure_keeps(r, i)) kept.push_back(i);
    for (int64_t i : kept) placed[ti][i] = special_value(kind);
    if (!kept.empty())
      described += std::string(described.empty() ? "" : "; ") + r.name + " " + what + " = " + special_name(kind);
  }
  for (size_t i = 0; i < c.tensors.size(); ++i)
    for (const auto& [index, value] : placed[i]) c.tensors[i].specials.push_back({index, value});
  c.label += " | specials: " + described;
  return c;
}

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
    const at::Tensor x = to_double ? t.to(at::kDouble) : t;
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

}  // namespace special_values

namespace {

constexpr int kCases = 30;                 // per --budget
constexpr int kMinCasesAtLargeShapes = 6;  // see run()

class SpecialValuesGate : public Gate {
 public:
  std::string name() const override { return "special-values"; }

  GateVerdict run(GateContext& ctx) override {
    SessionHolder holder(ctx, name());
    Stats stats;
    bool halted = false;  // the child died, hung or would not load: later cases are not run
    CaseRun last_failure;
    bool have_failure = false;
    auto check = [&](const Case& c) {
      GateVerdict pass;
      pass.name = name();
      if (halted) return pass;  // counts as passing, which ends RapidCheck's shrinking
      GateVerdict failed;
      WorkerSession* session = holder.get(&failed);
      if (!session) {
        halted = true;
        return failed;
      }
      CaseRun run = run_case(ctx, *session, c);
      GateVerdict v = judge(ctx, run, &stats);
      // Shrinking a crash, a hang or an exhausted memory limit costs a fresh child (and a whole
      // timeout) per attempt: report the first such case as found. Thrown errors are cheap and shrink.
      const auto kind = run.outcome.kind;
      if (kind == Outcome::Kind::Died || kind == Outcome::Kind::TimedOut || kind == Outcome::Kind::OutOfMemory ||
          kind == Outcome::Kind::LoadFailed) {
        holder.reset();
        halted = true;
      }
      if (v.status != Status::Pass) {
        last_failure = run;
        have_failure = true;
      }
      return v;
    };
    // At a contract's own large shapes, fewer cases (each still places up to six special values
    // or rows of them, over millions of elements); six keep every kind of placement likely.
    const CaseBudget budget = case_budget(ctx.space, kCaseCostCap, kCases, kMinCasesAtLargeShapes);
    const int max_cases = budget.cases * std::max(1, ctx.budget);
    PropertyOutcome out = run_property(ctx, name(), max_cases, [&] { return special_values::draw_case(ctx.space); },
                                       check, 150);
    if (out.failed) {
      GateVerdict v = out.verdict;
      v.name = name();
      v.cases = out.cases;
      v.evidence["cases_before_failure"] = out.cases;
      v.evidence["shrink_steps"] = out.shrink_steps;
      v.evidence["smallest_case"] = out.smallest.label;
      if (have_failure && v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), last_failure, v);
      return v;
    }
    GateVerdict v;
    v.name = name();
    v.cases = out.cases;
    v.evidence = {{"cases", out.cases},
                  {"special_inputs", stats.special_inputs},
                  {"nonfinite_expected", stats.nonfinite_expected},
                  {"finite_expected", stats.finite_expected}};
    if (stats.nan_through_exact_zero > 0) v.evidence["nan_through_exact_zero"] = stats.nan_through_exact_zero;
    if (stats.nonfinite_expected == 0) {
      // Every reference came out finite: the special values never reached an output, so
      // nothing about their propagation was checked.
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no generated case had a NaN or Inf in the reference output: nothing was verified";
      return v;
    }
    v.message = std::to_string(out.cases) + " cases, " + std::to_string(stats.special_inputs) +
                " special input values: NaN/Inf positions and signs as the oracle's (" +
                std::to_string(stats.nonfinite_expected) + " non-finite outputs), finite outputs within tolerance";
    if (stats.nan_through_exact_zero > 0)
      v.message += "; " + std::to_string(stats.nan_through_exact_zero) +
                   " outputs the reference made NaN only through products with exact zeros were judged with strong "
                   "zeros (0 x NaN = 0 x inf = 0; docs/tolerances.md)";
    if (budget.raised()) {
      v.message += "; " + budget.note();
      v.evidence["case_cost_floor"] = budget.floor;
    }
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    auto session = open_session(ctx, name(), &failed);
    if (!session) return failed;
    CaseRun run = run_case(ctx, *session, c);
    Stats stats;
    GateVerdict v = judge(ctx, run, &stats);
    if (v.status != Status::Pass && v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), run, v);
    return v;
  }

 private:
  struct Stats {
    int64_t special_inputs = 0, nonfinite_expected = 0, finite_expected = 0;
    int64_t nan_through_exact_zero = 0;  // accepted: see special_values::nan_through_exact_zero
  };

  // The four probes of special_values::strong_zero_reference, or nothing when the oracle rejects one.
  struct Probes {
    OracleResult small, nan_large, huge1, huge2;
    OracleResult flipped;  // huge1 with every infinity's sign changed
  };
  std::optional<Probes> strong_zero_probes(GateContext& ctx, const CaseRun& run) {
    namespace sv = special_values;
    const auto t0 = std::chrono::steady_clock::now();
    auto oracle_of = [&](const std::vector<at::Tensor>& inputs) { return run_oracle(ctx.schema.oracle, inputs, run.c.attrs); };
    // A probe that would change nothing is the small one (at a problem's size each is a float64
    // reference of seconds): without NaNs the NaN probe, without infinities the three huge ones.
    bool nan = false, inf = false;
    for (const at::Tensor& t : run.inputs)
      if (t.defined() && at::isFloatingType(t.scalar_type()) && t.numel() > 0) {
        nan = nan || at::isnan(t).any().item<bool>();
        inf = inf || at::isinf(t).any().item<bool>();
      }
    Probes p;
    p.small = oracle_of(sv::with_nonfinite_replaced(run.inputs, sv::kSmall, sv::kSmall, false));
    p.nan_large = nan ? oracle_of(sv::with_nonfinite_replaced(run.inputs, sv::kLarge, sv::kSmall, false)) : p.small;
    p.huge1 = inf ? oracle_of(sv::with_nonfinite_replaced(run.inputs, sv::kSmall, sv::kHuge1, true)) : p.small;
    p.huge2 = inf ? oracle_of(sv::with_nonfinite_replaced(run.inputs, sv::kSmall, sv::kHuge2, true)) : p.small;
    p.flipped = inf ? oracle_of(sv::with_nonfinite_replaced(run.inputs, sv::kSmall, -sv::kHuge1, true)) : p.small;
    const bool ok = p.small.ok() && p.nan_large.ok() && p.huge1.ok() && p.huge2.ok() && p.flipped.ok();
    ctx.timing.oracle += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!ok) return std::nullopt;
    return p;
  }

  GateVerdict judge(GateContext& ctx, const CaseRun& run, Stats* stats) {
    const Case& c = run.c;
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      GateVerdict e = verdict_from_outcome(ctx, name(), run);
      e.cases = 1;
      return e;
    }
    const DType case_dtype = c.tensors.at(0).dtype;
    auto tol_it = ctx.schema.tolerance.find(case_dtype);
    if (tol_it == ctx.schema.tolerance.end()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = std::string("the schema declares no tolerance for ") + dtype_name(case_dtype);
      return v;
    }
    for (const TensorRecipe& r : c.tensors) stats->special_inputs += int64_t(r.specials.size());
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const int64_t K = reduction_terms(ctx.schema, c);
    std::optional<Probes> probes;
    bool probes_done = false;
    // Output count and shape belong to the contract gate; judge what can be compared.
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const at::Tensor& ref = run.oracle.outputs[i];
      const DType odtype = expected_output_dtype(ctx.schema, i, c);
      if (ref.is_floating_point()) {
        // Count on the rounded reference: a finite fp64 value may round to inf in the dtype.
        at::Tensor rounded = ref.to(*wire::to_scalar_type(odtype));
        const int64_t nonfinite = (~at::isfinite(rounded)).sum().item<int64_t>();
        stats->nonfinite_expected += nonfinite;
        stats->finite_expected += rounded.numel() - nonfinite;
      }
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      // NaN-ness must match exactly and infinities in sign (judge_output checks those first);
      // finite elements stay under the schema's tolerance. Subnormal differences are the
      // subnormals gate's business, so the default options defer them.
      Judgement j = judge_output(oname, got.outputs[i], ref, scale, odtype, tol_it->second, K);
      if (!j.pass && j.nonfinite_mismatch > 0 && ref.is_floating_point()) {
        // A NaN the reference spreads through an exact zero is not the kernel's to copy: judge
        // those elements against the reference with strong zeros.
        if (!probes_done) {
          probes = strong_zero_probes(ctx, run);
          probes_done = true;
        }
        bool usable = probes && i < probes->small.outputs.size() && i < probes->nan_large.outputs.size() &&
                      i < probes->huge1.outputs.size() && i < probes->huge2.outputs.size();
        usable = usable && i < probes->flipped.outputs.size();
        if (usable) {
          at::Tensor mask;
          const at::Tensor patched = special_values::strong_zero_reference(
              ref, got.outputs[i], probes->small.outputs[i], probes->nan_large.outputs[i], probes->huge1.outputs[i],
              probes->huge2.outputs[i], probes->flipped.outputs[i], &mask);
          const int64_t accepted = mask.sum().item<int64_t>();
          if (accepted > 0) {
            at::Tensor patched_scale = scale;
            const auto& small_scales = probes->small.scales;
            if (scale.defined() && i < small_scales.size() && small_scales[i].defined())
              patched_scale = at::where(mask, small_scales[i].to(scale.scalar_type()), scale);
            j = judge_output(oname, got.outputs[i], patched, patched_scale, odtype, tol_it->second, K);
            stats->nan_through_exact_zero += accepted;
          }
        }
      }
      if (!j.pass) {
        v.status = Status::Fail;
        v.category = Category::WrongResult;
        v.message = "case " + c.label + ": " + j.message;
        v.evidence = {{"got", j.got},   {"expected", j.expected},           {"bad_elements", j.bad},
                      {"elements", j.checked}, {"nan_inf_mismatches", j.nonfinite_mismatch}};
        return v;
      }
    }
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_special_values_gate() { return std::make_unique<SpecialValuesGate>(); }

}  // namespace gauntlet
