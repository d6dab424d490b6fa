// Integer value spreads: group-by and join keys over skewed distributions, and segment offsets (integer_spread.h).
#include "gauntlet/cases/integer_spread.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>

#include "gauntlet/common/rng.h"

namespace gauntlet {
namespace {

// Sub-streams of one recipe's stream, so the draws of different steps never share counters.
constexpr uint64_t kStepStream = 0x6100, kMapStream = 0x6200, kCutStream = 0x6300, kRankStream = 0x6400, kLimitStream = 0x6500;

// exp(x) with +,-,*,/ and ldexp only (each correctly rounded, in a fixed order), so a Zipf table
// and the keys drawn from it are the same bits on every machine, as rng::portable_log is.
double portable_exp(double x) {
  if (x < -745) return 0;
  constexpr double kLn2 = 0.6931471805599453;
  const double k = std::floor(x / kLn2 + 0.5);
  const double r = x - k * kLn2;  // |r| <= ln2/2
  double term = 1, sum = 1;
  for (int i = 1; i <= 24; ++i) {
    term = term * r / double(i);
    sum += term;
  }
  return std::ldexp(sum, int(k));
}

// Ranks a Zipf draw can take: past 2^16 ranks the tail is cut (its keys then never appear), which
// keeps the table a few milliseconds to build; the hot keys, what a skew test is for, are all there.
constexpr int64_t kZipfRanks = int64_t(1) << 16;

// Cumulative Zipf weights over ranks 1..n (exponent alpha), normalized to end at 1; built once
// per (n, alpha) and kept, since every case of a gate draws from the same table.
const std::vector<double>& zipf_cdf(int64_t n, double alpha) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, double>, std::vector<double>> tables;
  std::lock_guard<std::mutex> lock(mu);
  std::vector<double>& cdf = tables[{n, alpha}];
  if (!cdf.empty()) return cdf;
  cdf.resize(size_t(std::max<int64_t>(n, 1)));
  double total = 0;
  for (int64_t k = 0; k < n; ++k) {
    total += portable_exp(-alpha * rng::portable_log(double(k + 1)));
    cdf[size_t(k)] = total;
  }
  for (double& c : cdf) c /= total;
  return cdf;
}

// A seeded bijection of [0, span): rank r -> (a*r + b) mod span with gcd(a, span) = 1, so the hot
// ranks of a Zipf draw, or the distinct keys, land anywhere in the key range, not at its start.
struct Scatter {
  uint64_t a = 1, b = 0, span = 1;
  Scatter(uint64_t span_, uint64_t seed, uint64_t stream) : span(std::max<uint64_t>(span_, 1)) {
    b = rng::below(seed, stream + kMapStream, 0, span);
    for (uint64_t i = 1;; ++i) {
      a = 1 + rng::below(seed, stream + kMapStream, i, span);
      if (std::gcd(a, span) == 1) break;
    }
  }
  // (a*r + b) mod span without overflow for spans up to 2^63.
  uint64_t operator()(uint64_t r) const {
    return uint64_t((static_cast<unsigned __int128>(a) * r + b) % span);
  }
};

// Segment lengths summing to `total` in proportion to `weights` (largest remainders go first, ties
// to the lower index), so the lengths are exact integers and the proportions as close as they can be.
std::vector<int64_t> apportion(int64_t total, const std::vector<double>& weights) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int64_t> len(weights.size(), 0);
  std::vector<std::pair<double, size_t>> rest;
  int64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double exact = sum > 0 ? double(total) * weights[i] / sum : 0;
    len[i] = int64_t(std::floor(exact));
    given += len[i];
    rest.push_back({exact - double(len[i]), i});
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; given < total && !rest.empty(); ++i, ++given) ++len[rest[i % rest.size()].second];
  return len;
}

}  // namespace

const char* spread_name(Spread s) {
  switch (s) {
    case Spread::Uniform: return "uniform";
    case Spread::Zipf: return "zipf";
    case Spread::AllEqual: return "all_equal";
    case Spread::AllDistinct: return "all_distinct";
    case Spread::SortedRuns: return "sorted_runs";
    case Spread::Extremes: return "extremes";
    case Spread::Int64Limits: return "int64_limits";
  }
  return "uniform";
}

std::optional<Spread> spread_from_name(const std::string& name) {
  if (name.empty() || name == "uniform") return Spread::Uniform;
  if (name == "zipf") return Spread::Zipf;
  if (name == "all_equal") return Spread::AllEqual;
  if (name == "all_distinct") return Spread::AllDistinct;
  if (name == "sorted_runs") return Spread::SortedRuns;
  if (name == "extremes") return Spread::Extremes;
  if (name == "int64_limits") return Spread::Int64Limits;
  return std::nullopt;
}

std::vector<int64_t> draw_keys(int64_t n, int64_t low, int64_t high, Spread spread, double alpha, bool sorted,
                               uint64_t seed, uint64_t stream) {
  std::vector<int64_t> keys(size_t(std::max<int64_t>(n, 0)));
  const uint64_t span = uint64_t(std::max<int64_t>(1, high - low));
  const Scatter scatter(span, seed, stream);
  switch (spread) {
    case Spread::Uniform:
      for (int64_t i = 0; i < n; ++i) keys[size_t(i)] = low + int64_t(rng::below(seed, stream, uint64_t(i), span));
      break;
    case Spread::Zipf: {
      const std::vector<double>& cdf = zipf_cdf(int64_t(std::min<uint64_t>(span, uint64_t(kZipfRanks))), alpha > 0 ? alpha : 1.0);
      for (int64_t i = 0; i < n; ++i) {
        const double u = rng::uniform01(seed, stream + kRankStream, uint64_t(i));
        const auto rank = uint64_t(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
        keys[size_t(i)] = low + int64_t(scatter(std::min<uint64_t>(rank, cdf.size() - 1)));
      }
      break;
    }
    case Spread::AllEqual:
      std::fill(keys.begin(), keys.end(), low + int64_t(scatter(0)));
      break;
    case Spread::AllDistinct:  // distinct while i < span; past that each key comes round again
      for (int64_t i = 0; i < n; ++i) keys[size_t(i)] = low + int64_t(scatter(uint64_t(i) % span));
      break;
    case Spread::Extremes:
      for (int64_t i = 0; i < n; ++i) keys[size_t(i)] = rng::below(seed, stream, uint64_t(i), 2) ? high - 1 : low;
      break;
    case Spread::Int64Limits: {
      constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
      const int64_t limits[4] = {kMin, kMin + 1, kMax - 1, kMax};
      for (int64_t i = 0; i < n; ++i)
        keys[size_t(i)] = rng::below(seed, stream + kLimitStream, uint64_t(i), 4) == 0
                              ? limits[rng::below(seed, stream + kLimitStream, uint64_t(i) + uint64_t(n), 4)]
                              : low + int64_t(rng::below(seed, stream, uint64_t(i), span));
      break;
    }
    case Spread::SortedRuns: {
      // Runs of 1 to 2*mean equal keys, ascending with random gaps, the mean run long enough that
      // the keys would fill about half the range.
      const int64_t mean_run = std::max<int64_t>(1, 2 * n / int64_t(std::min<uint64_t>(span, uint64_t(n) + 1)));
      int64_t key = low + int64_t(rng::below(seed, stream + kStepStream, 0, std::max<uint64_t>(1, span / 4)));
      for (int64_t i = 0, step = 1; i < n; ++step) {
        const int64_t run = 1 + int64_t(rng::below(seed, stream, uint64_t(step), uint64_t(2 * mean_run)));
        for (int64_t j = 0; j < run && i < n; ++j) keys[size_t(i++)] = std::min(key, high - 1);
        key += 1 + int64_t(rng::below(seed, stream + kStepStream, uint64_t(step), 3));
      }
      break;
    }
  }
  if (sorted) std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<int64_t> draw_offsets(int64_t count, int64_t total, Spread spread, double alpha, uint64_t seed,
                                  uint64_t stream) {
  if (count <= 0) return {};
  if (count == 1) return {0};
  const int64_t segments = count - 1;
  total = std::max<int64_t>(total, 0);
  std::vector<double> weights(size_t(segments), 1.0);
  switch (spread) {
    case Spread::Uniform:
    case Spread::SortedRuns:
    case Spread::Extremes:
    case Spread::Int64Limits:
      for (int64_t s = 0; s < segments; ++s) weights[size_t(s)] = rng::uniform01(seed, stream + kCutStream, uint64_t(s));
      break;
    case Spread::Zipf: {
      // Weights (rank+1)^(-2 alpha) by a scattered rank: a few huge segments anywhere, and after
      // rounding to whole lengths most of the rest empty.
      const Scatter scatter(uint64_t(segments), seed, stream);
      const double a = alpha > 0 ? alpha : 1.0;
      for (int64_t s = 0; s < segments; ++s)
        weights[size_t(s)] = portable_exp(-a * 2 * rng::portable_log(double(scatter(uint64_t(s)) + 1)));
      break;
    }
    case Spread::AllEqual: {
      std::fill(weights.begin(), weights.end(), 0.0);
      weights[size_t(rng::below(seed, stream + kCutStream, 0, uint64_t(segments)))] = 1.0;
      break;
    }
    case Spread::AllDistinct:
      break;  // equal weights: lengths differ by at most one
  }
  const std::vector<int64_t> len = apportion(total, weights);
  std::vector<int64_t> offsets(size_t(count), 0);
  for (int64_t s = 0; s < segments; ++s) offsets[size_t(s + 1)] = offsets[size_t(s)] + len[size_t(s)];
  return offsets;
}

}  // namespace gauntlet
