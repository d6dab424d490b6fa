// Property-based checking for gates: RapidCheck draws cases from the schema's domain and shrinks a
// failure to the smallest failing case, which is what the report and the replay file show.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gauntlet/cases/gate.h"

namespace gauntlet {

// A gate's child that is reopened after it dies (a crash must not end the search for a smaller
// failing case).
class SessionHolder {
 public:
  SessionHolder(GateContext& ctx, std::string gate) : ctx_(ctx), gate_(std::move(gate)) {}
  // The live session, or nullptr with *failed set (load-error, harness error).
  WorkerSession* get(GateVerdict* failed);
  // Forget the session (after a crash or timeout killed it).
  void reset() { session_.reset(); }

 private:
  GateContext& ctx_;
  std::string gate_;
  std::unique_ptr<WorkerSession> session_;
};

// A crash, a hang, an exhausted memory limit or a failed load costs a fresh child (and for a hang
// a whole timeout) per attempt: a search reports the first such case instead of shrinking it.
bool ends_search(const GateVerdict& v);

// The `check` of a gate that runs each case once in its one child and judges that run alone
// (special-values, subnormals). After a case whose child died, hung, ran out of memory or would not
// load, the child is dropped and every later case counts as passing, which ends RapidCheck's
// shrinking. Not copyable, so that the state a search builds is never split between copies: hand
// it to run_property as std::ref(check).
class OneChildCaseCheck {
 public:
  using Judge = std::function<GateVerdict(const CaseRun&)>;
  OneChildCaseCheck(GateContext& ctx, const std::string& gate, Judge judge);
  OneChildCaseCheck(const OneChildCaseCheck&) = delete;
  OneChildCaseCheck& operator=(const OneChildCaseCheck&) = delete;

  GateVerdict operator()(const Case& c);
  // The run of the last failing case (after a search, the smallest it found), or nullptr.
  const CaseRun* last_failure() const { return have_failure_ ? &last_failure_ : nullptr; }

 private:
  GateContext& ctx_;
  std::string gate_;
  Judge judge_;
  SessionHolder holder_;
  bool halted_ = false;
  CaseRun last_failure_;
  bool have_failure_ = false;
};

struct PropertyOutcome {
  bool failed = false;
  GateVerdict verdict;   // the verdict of the smallest failing case (when failed)
  Case smallest;
  int cases = 0;         // generated cases judged before the first failure
  int shrink_steps = 0;  // further evaluations spent shrinking
};

// Runs `check` on up to `max_cases` cases drawn by `pick` (called inside a RapidCheck property:
// draw values with *rc::gen::..., each in its own statement, fixed-width types, so the draw order
// is the same on every compiler). A non-pass verdict is a failure: RapidCheck then shrinks the
// draws and the last failing case seen is the smallest. Harness errors stop the search without
// shrinking. At most `max_shrink_steps` evaluations are spent shrinking. The seed derives from the
// context (master seed, kernel hash, gate), so the same run finds the same case.
// RapidCheck itself runs under rapidcheck_mutex() (its generation state is process-wide), replaying
// the outcomes judged so far; `check` runs outside it, so the gates of a kernel search side by side.
std::recursive_mutex& rapidcheck_mutex();

PropertyOutcome run_property(GateContext& ctx, const std::string& gate, int max_cases,
                             const std::function<Case()>& pick,
                             const std::function<GateVerdict(const Case&)>& check,
                             int max_shrink_steps = 200);

// Shrinkable draws for use inside `pick` (RapidCheck shrinks each toward its first candidate):
// one size per schema dim from `candidates_for(dim)` (smallest first); an element of a list.
std::map<std::string, int64_t> pick_dims(const CaseSpace& space,
                                         const std::function<std::vector<int64_t>(const std::string&)>& candidates_for);
int64_t pick_index(int64_t n);  // uniform in [0, n), shrinking toward 0
uint64_t pick_seed();           // a value seed for tensors (not shrunk)
// Uniform in [0, n) whatever RapidCheck's current size (inRange narrows with it), shrinking toward 0.
int64_t draw_uniform(int64_t n);
// Candidate sizes of a dim, smallest first (the shrink target): 1, 2, 3, 5, 8 and the schema's
// typical sizes, up to `cap`, inside the kernel's contract (never empty: the contract's least
// nonzero size when none fits). Zero sizes are the shapes gate's.
std::vector<int64_t> small_dim_sizes(const CaseSpace& space, const std::string& dim, int64_t cap);
// A case's attributes: the manifest's fixed value, else for a dim attribute -1 (the shrink target)
// or 0..rank-1 of the input it names (shape alternative `alt` for the first input), else one of
// the schema's listed values, else its default.
AttrMap draw_attrs(const CaseSpace& space, size_t alt);
// One of the contract's dtypes, the most precise of them at least half the time: a 16-bit output
// rounds away most low-bit differences between calls or summation orders.
DType draw_precise_dtype(const std::vector<DType>& dtypes);
// The most precise of `dtypes` (most mantissa bits; the first of equals).
DType most_precise(const std::vector<DType>& dtypes);

}  // namespace gauntlet
