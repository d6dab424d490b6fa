// RapidCheck-driven case search and shrinking for gates (see include/gauntlet/property.h).
#include "gauntlet/property.h"

#include <fcntl.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <cstdio>

#include "gauntlet/rng.h"

namespace gauntlet {
namespace {

// RapidCheck's default listener prints to stderr; gauntlet reports through verdicts instead.
class SilentListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// RapidCheck announces its global configuration on stderr the first time it is read; gauntlet's
// output is its own, so that first read happens with stderr parked on /dev/null.
void load_rapidcheck_configuration_quietly() {
  static bool done = false;
  if (done) return;
  done = true;
  std::fflush(stderr);
  const int saved = dup(2);
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && null_fd >= 0) dup2(null_fd, 2);
  (void)rc::detail::configuration();
  std::fflush(stderr);
  if (saved >= 0) dup2(saved, 2), close(saved);
  if (null_fd >= 0) close(null_fd);
}

}  // namespace

WorkerSession* SessionHolder::get(GateVerdict* failed) {
  if (!session_) session_ = open_session(ctx_, gate_, failed);
  return session_.get();
}

std::recursive_mutex& rapidcheck_mutex() {
  static std::recursive_mutex m;
  return m;
}

PropertyOutcome run_property(GateContext& ctx, const std::string& gate, int max_cases,
                             const std::function<Case()>& pick,
                             const std::function<GateVerdict(const Case&)>& check, int max_shrink_steps) {
  // Measured on the H200: two gates in RapidCheck at once crash in its ExecHandler.
  std::lock_guard<std::recursive_mutex> rapidcheck_lock(rapidcheck_mutex());
  PropertyOutcome out;
  bool stop = false;         // a harness error or the shrink budget: every further case passes
  bool any_failure = false;
  int evaluations = 0;
  auto property = [&]() {
    Case c = pick();
    if (stop) return;
    if (any_failure && ++out.shrink_steps > max_shrink_steps) {
      stop = true;
      return;
    }
    c.index = uint64_t(evaluations++);
    if (!any_failure) ++out.cases;
    GateVerdict v = check(c);
    if (v.status == Status::Pass || v.status == Status::Skip) return;
    any_failure = true;
    out.failed = true;
    out.verdict = v;  // RapidCheck evaluates smaller candidates later: the last failure is the smallest
    out.smallest = c;
    if (v.status == Status::HarnessError) stop = true;
    RC_FAIL(v.message);
  };
  load_rapidcheck_configuration_quietly();
  rc::detail::TestParams params;
  params.seed = ctx.case_seed(gate, 0xC0DE);
  params.maxSuccess = std::max(1, max_cases);
  params.maxSize = 100;
  params.maxDiscardRatio = 10;
  SilentListener listener;
  rc::detail::TestMetadata metadata;
  metadata.id = gate;
  metadata.description = gate;
  try {
    rc::detail::checkTestable(property, metadata, params, listener);
  } catch (const std::exception& e) {
    out.failed = true;
    out.verdict.name = gate;
    out.verdict.status = Status::HarnessError;
    out.verdict.category = Category::HarnessError;
    out.verdict.message = std::string("property search failed: ") + e.what();
  }
  return out;
}

std::map<std::string, int64_t> pick_dims(const CaseSpace& space,
                                         const std::function<std::vector<int64_t>(const std::string&)>& candidates_for) {
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : space.schema().dims) {
    std::vector<int64_t> candidates = candidates_for(name);
    if (candidates.empty()) candidates = {space.limits_for(name).first};
    const int64_t i = *rc::gen::inRange<int64_t>(0, int64_t(candidates.size()));
    dims[name] = candidates[size_t(i)];
  }
  return dims;
}

int64_t pick_index(int64_t n) { return n <= 1 ? 0 : *rc::gen::inRange<int64_t>(0, n); }

uint64_t pick_seed() { return *rc::gen::noShrink(rc::gen::arbitrary<uint64_t>()); }

}  // namespace gauntlet
