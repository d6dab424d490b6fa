// The special-values gate's placements: NaN and Inf at the first, last, random, tile-edge, row and line positions of drawn cases.
#include "special_values_placement.h"

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/cases/property.h"
#include "special_values_case_shapes.h"

namespace gauntlet::special_values {
namespace {

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

double special_value(int64_t kind) {
  return kind == 0 ? NAN : kind == 1 ? INFINITY : -INFINITY;
}

const char* special_name(int64_t kind) { return kind == 0 ? "nan" : kind == 1 ? "+inf" : "-inf"; }

}  // namespace

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

Case draw_case(const CaseSpace& space) {
  const uint64_t seed = pick_seed();
  const auto& dtypes = space.dtypes();
  const DType dtype = dtypes[size_t(gate_cases::pick_uniform(int64_t(dtypes.size())))];
  int64_t nfloat = 0;
  for (const InputSpec& in : space.schema().inputs)
    if (in.values.kind == "real" || in.values.kind == "positive" || in.values.kind == "nonnegative" ||
        in.values.kind == "quantizable")
      ++nfloat;
  // The special values the schema's nan_inf.inputs allows (all three by default): 0 NaN, 1 +inf, 2 -inf.
  std::vector<int64_t> kinds;
  for (const std::string& k : space.schema().nan_inf_inputs)
    kinds.push_back(k == "nan" ? 0 : k == "+inf" ? 1 : 2);
  if (kinds.empty()) kinds = {0, 1, 2};
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
  for (const auto& [t, drawn_kind, where, a, b] : placements) {
    if (floating.empty()) break;
    const int64_t kind = kinds[size_t(drawn_kind) % kinds.size()];
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


}  // namespace gauntlet::special_values
