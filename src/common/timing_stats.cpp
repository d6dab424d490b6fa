// The timing gate's arithmetic: order statistics of samples, the roofline time, cuobjdump parsing.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "gauntlet/common/timing.h"

namespace gauntlet::timing {
namespace {

// Linear interpolation between order statistics (the usual "type 7" quantile).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Summary summarize(std::vector<double> samples) {
  Summary s;
  s.n = int(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(samples, 0.5);
  s.p25 = quantile(samples, 0.25);
  s.p75 = quantile(samples, 0.75);
  // Ranks (1-based) of the binomial confidence interval for the median; the sample's extremes
  // when it is too small for a 95% interval.
  const double n = double(samples.size());
  const double half_width = 1.96 * std::sqrt(n) / 2;
  const long lo = std::max(1L, long(std::floor(n / 2 - half_width)));
  const long hi = std::min(long(n), long(std::ceil(n / 2 + 1 + half_width)));
  s.ci_low = samples[size_t(lo - 1)];
  s.ci_high = samples[size_t(hi - 1)];
  return s;
}

Roofline roofline(double flops, double bytes, double peak_flops, double peak_bytes_per_s) {
  Roofline r;
  r.compute_seconds = peak_flops > 0 ? flops / peak_flops : 0;
  r.memory_seconds = peak_bytes_per_s > 0 ? bytes / peak_bytes_per_s : 0;
  r.seconds = std::max(r.compute_seconds, r.memory_seconds);
  r.bound = r.compute_seconds > r.memory_seconds ? "compute" : "memory";
  return r;
}

// cuobjdump --dump-resource-usage prints, per function:
//   Function _Z11relu_kernelIfEvPKT_PS0_l:
//   REG:16 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:380 TEXTURE:0 SURFACE:0 SAMPLER:0
std::vector<KernelResources> parse_resource_usage(const std::string& text) {
  std::vector<KernelResources> out;
  std::istringstream in(text);
  std::string line;
  KernelResources* current = nullptr;
  while (std::getline(in, line)) {
    const size_t f = line.find("Function ");
    if (f != std::string::npos) {
      std::string name = line.substr(f + 9);
      while (!name.empty() && (name.back() == ':' || name.back() == ' ' || name.back() == '\r')) name.pop_back();
      out.push_back(KernelResources{name});
      current = &out.back();
      continue;
    }
    if (!current || line.find("REG:") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string field;
    while (fields >> field) {
      const size_t colon = field.rfind(':');
      if (colon == std::string::npos) continue;
      const std::string key = field.substr(0, colon);
      long long value = 0;
      try {
        value = std::stoll(field.substr(colon + 1));
      } catch (...) {
        continue;
      }
      if (key == "REG") current->registers = int(value);
      else if (key == "SHARED") current->shared_bytes = value;
      else if (key == "LOCAL") current->local_bytes = value;
      else if (key == "STACK") current->stack_bytes = value;
    }
    current = nullptr;
  }
  return out;
}

Steadiness steadiness(const std::vector<double>& candidate_ms, size_t sets) {
  Steadiness out;
  const Summary all = summarize(candidate_ms);
  out.n = all.n;
  out.median = all.median;
  // Call i times input set i % sets and goes first on even i, second (right after the baseline
  // on the same inputs, whose data it then finds in cache) on odd i: a group per (set, order).
  sets = std::max<size_t>(1, sets);
  const size_t period = sets % 2 ? 2 * sets : sets;
  std::vector<double> spreads;
  for (size_t s = 0; s < period; ++s) {
    std::vector<double> mine;
    for (size_t i = s; i < candidate_ms.size(); i += period) mine.push_back(candidate_ms[i]);
    if (!mine.empty()) spreads.push_back(summarize(mine).spread());
  }
  out.spread = spreads.empty() ? 0 : summarize(spreads).median;
  return out;
}

bool unsteady(const Steadiness& run, double fastest_median) {
  if (run.n == 0) return false;
  return run.spread > kUnsteadyIqr || (fastest_median > 0 && run.median > kUnsteadyRatio * fastest_median);
}

bool steadier(const Steadiness& b, const Steadiness& a, double fastest_median) {
  const bool ub = unsteady(b, fastest_median), ua = unsteady(a, fastest_median);
  if (ub != ua) return !ub;
  return b.median < a.median;
}

}  // namespace gauntlet::timing
