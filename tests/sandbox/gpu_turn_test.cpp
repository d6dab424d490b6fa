// GPU turns (gpu_turn.h): exclusion across threads and processes, re-entry, waits, and the bound:
// a request past it gives the GPU to the next child (a fake device's lock file stands for a GPU).
#include "gauntlet/sandbox/gpu_turn.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "gauntlet/build/builder.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {
namespace {

using Clock = std::chrono::steady_clock;

std::string temp_lock_path(const char* tag) {
  return "/tmp/gauntlet-test-" + std::string(tag) + "-" + std::to_string(getpid()) + ".lock";
}

TEST(GpuTurn, LockFileIsNamedAfterTheGpuTheChildrenSee) {
  const char* saved = getenv("CUDA_VISIBLE_DEVICES");
  const std::string keep = saved ? saved : "";
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(gpu_turn_path(3), "/tmp/gauntlet-gpu-turn-3.lock");
  setenv("CUDA_VISIBLE_DEVICES", "GPU-8a1c/x,GPU-77f0", 1);
  EXPECT_EQ(gpu_turn_path(0), "/tmp/gauntlet-gpu-turn-GPU-8a1c_x.lock");  // no path separators
  EXPECT_EQ(gpu_turn_path(1), "/tmp/gauntlet-gpu-turn-GPU-77f0.lock");
  saved ? setenv("CUDA_VISIBLE_DEVICES", keep.c_str(), 1) : unsetenv("CUDA_VISIBLE_DEVICES");
}

// A GPU index no machine has, so the test never meets a real gauntlet's turns.
constexpr int kTestGpu = 9731;

// A turn held at least 40 ms is counted among the turns longer than 30 ms, never a shorter slot.
TEST(GpuTurn, TotalsCountEachTurnByHowLongItWasHeld) {
  const GpuTurn::Totals before = GpuTurn::process_totals();
  {
    GpuTurn t(kTestGpu);
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  const GpuTurn::Totals after = GpuTurn::process_totals();
  EXPECT_EQ(after.turns, before.turns + 1);
  long longer = 0, shorter = 0;
  double held_longer = 0;
  for (int i = 0; i < GpuTurn::kHeldSlots; ++i) {
    const long n = after.turns_by_length[i] - before.turns_by_length[i];
    (i > 0 && GpuTurn::kHeldEdges[i - 1] >= 0.03 ? longer : shorter) += n;
    if (i > 0 && GpuTurn::kHeldEdges[i - 1] >= 0.03) held_longer += after.held_by_length[i] - before.held_by_length[i];
  }
  EXPECT_EQ(shorter, 0);
  EXPECT_EQ(longer, 1);
  EXPECT_GE(held_longer, 0.04);
}

TEST(GpuTurn, ReenteringOnTheSameThreadDoesNotWait) {
  GpuTurn outer(kTestGpu);
  const auto t0 = Clock::now();
  {
    GpuTurn inner(kTestGpu);  // the timing gate's exchanges inside its clock section
    EXPECT_EQ(inner.waited_seconds(), 0.0);
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
}

TEST(GpuTurn, AnotherThreadWaitsUntilTheOuterTurnEnds) {
  std::atomic<bool> got{false};
  double waited = 0;
  std::thread other;
  {
    GpuTurn outer(kTestGpu);
    { GpuTurn inner(kTestGpu); }  // leaving the inner turn must not release the outer one
    other = std::thread([&] {
      GpuTurn t(kTestGpu);
      waited = t.waited_seconds();
      got = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(got.load()) << "two threads held one GPU's turn at once";
  }
  other.join();
  EXPECT_TRUE(got.load());
  EXPECT_GE(waited, 0.15);
}

TEST(GpuTurn, ProcessesTakeTurnsOnOneGpu) {
  // Two processes each hold the turn 150 ms, three times; overlapping holds would show as a
  // shared marker file seen by both. Serialized, the run takes at least 6 x 150 ms.
  const std::string marker = temp_lock_path("marker");
  unlink(marker.c_str());
  const auto t0 = Clock::now();
  pid_t kids[2];
  for (pid_t& kid : kids) {
    kid = fork();
    if (kid == 0) {
      int overlaps = 0;
      for (int i = 0; i < 3; ++i) {
        GpuTurn t(kTestGpu);
        if (access(marker.c_str(), F_OK) == 0) ++overlaps;
        FILE* f = fopen(marker.c_str(), "w");
        if (f) fclose(f);
        usleep(150000);
        unlink(marker.c_str());
      }
      _exit(overlaps);
    }
  }
  for (pid_t kid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(kid, &status, 0), kid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a process found the other inside its turn";
  }
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 0.85);
}

TEST(GpuTurn, AnOverrunGivesTheTurnToTheNextWaiterAndMarksTheGpuShared) {
  const std::string path = temp_lock_path("overrun");
  auto slow = std::make_unique<GpuTurn>(path);
  EXPECT_FALSE(GpuTurn::overrun_in_progress(path));
  std::promise<void> granted;
  std::thread next([&] {
    GpuTurn t(path);
    granted.set_value();
  });
  std::future<void> got = granted.get_future();
  EXPECT_EQ(got.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the next child got the GPU while the first held its turn";
  slow->overrun();
  EXPECT_TRUE(slow->overran());
  // Granted while the first turn's object still lives: only the overrun can have released it.
  ASSERT_EQ(got.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "an overrun did not give the turn to the waiting child";
  next.join();
  EXPECT_TRUE(GpuTurn::overrun_in_progress(path)) << "the overrunning child still runs: the GPU is shared";
  const GpuTurn::Totals before = GpuTurn::process_totals();
  slow.reset();  // its request ended
  EXPECT_FALSE(GpuTurn::overrun_in_progress(path));
  EXPECT_EQ(GpuTurn::process_totals().overruns, before.overruns + 1);
  unlink(path.c_str());
  unlink((path + ".overrun").c_str());
}

// Every case's turn asks whether a child overruns: two probes at one instant must not see each
// other as an overrun (a probe that took the mark for an instant made the other's try fail).
TEST(GpuTurn, ProbesAtOnceNeverSeeAnOverrunThatIsNotThere) {
  const std::string path = temp_lock_path("probes");
  std::atomic<long> seen{0};
  auto probe = [&] {
    for (int i = 0; i < 20000; ++i) seen += GpuTurn::overrun_in_progress(path) ? 1 : 0;
  };
  std::thread a(probe), b(probe), c(probe);
  a.join();
  b.join();
  c.join();
  EXPECT_EQ(seen.load(), 0) << "probes took each other for an overrunning child";
  auto spinner = std::make_unique<GpuTurn>(path);
  spinner->overrun();
  std::thread d([&] { seen += GpuTurn::overrun_in_progress(path) ? 1 : 0; });  // another thread, as another process
  d.join();
  EXPECT_EQ(seen.load(), 1) << "a probe missed the overrunning child";
  spinner.reset();
  EXPECT_FALSE(GpuTurn::overrun_in_progress(path));
  unlink(path.c_str());
  unlink((path + ".overrun").c_str());
}

TEST(GpuTurn, AReenteredTurnIsNeverGivenUp) {
  const std::string path = temp_lock_path("reentered");
  auto outer = std::make_unique<GpuTurn>(path);  // the timing gate's clock section
  {
    GpuTurn inner(path);  // one of its exchanges
    EXPECT_FALSE(inner.outer());
    inner.overrun();
    EXPECT_FALSE(inner.overran());
  }
  EXPECT_FALSE(GpuTurn::overrun_in_progress(path));
  std::atomic<bool> got{false};
  std::thread other([&] {
    GpuTurn t(path);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(got.load()) << "the outer turn was released by an inner overrun";
  outer.reset();
  other.join();
  EXPECT_TRUE(got.load());
  unlink(path.c_str());
}

// ---- turn slots while a child overruns ---------------------------------------------------------
// A turn held in a thread of its own (turns re-enter per thread), taken at construction and given
// back by release(); granted() says whether it was granted within `within`.
class HeldTurn {
 public:
  HeldTurn(const std::string& path, TurnNeed need, int slots) {
    thread_ = std::thread([this, path, need, slots] {
      GpuTurn t(path, need, slots);
      beside_ = t.beside_others();
      granted_.set_value();
      release_.get_future().wait();
    });
  }
  ~HeldTurn() {
    release();
    thread_.join();
  }
  bool granted(std::chrono::milliseconds within) {
    return got_.wait_for(within) == std::future_status::ready;
  }
  bool beside_others() const { return beside_; }
  void release() {
    if (!released_) release_.set_value(), released_ = true;
  }

 private:
  std::promise<void> granted_, release_;
  std::future<void> got_ = granted_.get_future();
  std::atomic<bool> beside_{false};
  bool released_ = false;
  std::thread thread_;
};

void remove_turn_files(const std::string& path) {
  unlink(path.c_str());
  unlink((path + ".overrun").c_str());
  for (int i = 1; i < GpuTurn::kMaxSlots; ++i) unlink((path + ".slot" + std::to_string(i)).c_str());
}

constexpr auto kSurelyGranted = std::chrono::seconds(10);
constexpr auto kWouldHaveBeenGranted = std::chrono::milliseconds(200);

TEST(GpuTurnSlots, WhileAChildOverrunsCasesHoldFreeSlotsAtOnce) {
  const std::string path = temp_lock_path("slots-overrun");
  auto spinner = std::make_unique<GpuTurn>(path, TurnNeed::Case, 4);
  spinner->overrun();
  {
    // One after another, so that a holds slot 0, where a case waits when every slot is taken.
    HeldTurn a(path, TurnNeed::Case, 4);
    ASSERT_TRUE(a.granted(kSurelyGranted));
    HeldTurn b(path, TurnNeed::Case, 4);
    ASSERT_TRUE(b.granted(kSurelyGranted)) << "a second case queued behind the first beside an overrunning child";
    HeldTurn c(path, TurnNeed::Case, 4);
    ASSERT_TRUE(c.granted(kSurelyGranted));
    EXPECT_TRUE(a.beside_others() && b.beside_others() && c.beside_others());
    HeldTurn d(path, TurnNeed::Case, 4), e(path, TurnNeed::Case, 4);  // four slots: one of them waits
    const bool d_got = d.granted(kWouldHaveBeenGranted), e_got = e.granted(kWouldHaveBeenGranted);
    EXPECT_NE(d_got, e_got) << "four slots must admit exactly one more case (" << d_got << ", " << e_got << ")";
    a.release();
    EXPECT_TRUE(d.granted(kSurelyGranted) && e.granted(kSurelyGranted)) << "a freed slot was not taken";
  }
  spinner.reset();
  remove_turn_files(path);
}

// One case holds a turn alone; a second waits until the first gives it back.
void expect_cases_one_at_a_time(const std::string& path, int slots, const char* why) {
  HeldTurn a(path, TurnNeed::Case, slots);
  ASSERT_TRUE(a.granted(kSurelyGranted));
  EXPECT_FALSE(a.beside_others());
  HeldTurn b(path, TurnNeed::Case, slots);
  EXPECT_FALSE(b.granted(kWouldHaveBeenGranted)) << why;
  a.release();
  EXPECT_TRUE(b.granted(kSurelyGranted));
}

TEST(GpuTurnSlots, OneSlotKeepsCasesOneAtATimeBesideAnOverrun) {
  const std::string path = temp_lock_path("slots-one");
  auto spinner = std::make_unique<GpuTurn>(path, TurnNeed::Case, 1);
  spinner->overrun();
  expect_cases_one_at_a_time(path, 1, "two cases held turns at once with one slot");
  spinner.reset();
  remove_turn_files(path);
}

TEST(GpuTurnSlots, WithoutAnOverrunCasesTakeTurnsOneAtATimeWhateverTheSlots) {
  const std::string path = temp_lock_path("slots-none");
  expect_cases_one_at_a_time(path, 4, "slots were shared with no child overrunning");
  remove_turn_files(path);
}

// A timed run must not have a case inside its clock: once the overrun is over it waits for every
// case still holding a slot, and holds them all until it ends.
TEST(GpuTurnSlots, AWholeDeviceTurnWaitsForEverySlotAndThenExcludesCases) {
  const std::string path = temp_lock_path("slots-whole");
  auto spinner = std::make_unique<GpuTurn>(path, TurnNeed::Case, 4);
  spinner->overrun();
  auto a = std::make_unique<HeldTurn>(path, TurnNeed::Case, 4);
  ASSERT_TRUE(a->granted(kSurelyGranted));
  auto b = std::make_unique<HeldTurn>(path, TurnNeed::Case, 4);
  ASSERT_TRUE(b->granted(kSurelyGranted));
  spinner.reset();  // the overrun ends; a and b still run their cases
  ASSERT_FALSE(GpuTurn::overrun_in_progress(path));
  auto timed = std::make_unique<HeldTurn>(path, TurnNeed::WholeDevice, 4);
  EXPECT_FALSE(timed->granted(kWouldHaveBeenGranted)) << "a timed run started beside two cases";
  a.reset();
  EXPECT_FALSE(timed->granted(kWouldHaveBeenGranted)) << "a timed run started beside a case on another slot";
  b.reset();
  ASSERT_TRUE(timed->granted(kSurelyGranted));
  EXPECT_FALSE(timed->beside_others());
  {
    HeldTurn c(path, TurnNeed::Case, 4);
    EXPECT_FALSE(c.granted(kWouldHaveBeenGranted)) << "a case ran inside a timed run";
    timed.reset();
    EXPECT_TRUE(c.granted(kSurelyGranted));
  }
  remove_turn_files(path);
}

// During an overrun a timed run cannot have the device to itself (its figures are uncertain); it
// takes one slot instead of stopping every other child for its whole run.
TEST(GpuTurnSlots, AWholeDeviceTurnDuringAnOverrunTakesOneSlotBesideCases) {
  const std::string path = temp_lock_path("slots-whole-overrun");
  auto spinner = std::make_unique<GpuTurn>(path, TurnNeed::Case, 4);
  spinner->overrun();
  {
    HeldTurn a(path, TurnNeed::Case, 4);
    ASSERT_TRUE(a.granted(kSurelyGranted));
    HeldTurn timed(path, TurnNeed::WholeDevice, 4);
    ASSERT_TRUE(timed.granted(kSurelyGranted)) << "a timed run waited for a case beside an overrunning child";
    EXPECT_TRUE(timed.beside_others());
    HeldTurn b(path, TurnNeed::Case, 4);
    EXPECT_TRUE(b.granted(kSurelyGranted)) << "a timed run beside an overrun kept the other slots";
  }
  spinner.reset();
  const GpuTurn::Totals before = GpuTurn::process_totals();
  { GpuTurn lone(path, TurnNeed::Case, 4); }
  EXPECT_EQ(GpuTurn::process_totals().beside_others, before.beside_others) << "the spinner's overrun had ended";
  remove_turn_files(path);
}

// ---- the bound in the sandbox, on a fake device ------------------------------------------------
// CPU children take turns on a lock file as CUDA children do (SandboxOptions::fake_gpu_turn_lock):
// one spins (corpus/hostile/infinite_loop.cpp, killed at its --timeout), and another kernel's
// cases must not queue behind it for that whole timeout once the spinner is past the bound.

std::string build_corpus_kernel(const char* rel) {
  BuildRequest r;
  r.source_path = std::string(GAUNTLET_SOURCE_DIR) + "/" + rel;
  r.entries = {"forward"};
  BuildResult b = build_kernel(r, default_build_config());
  return b.ok ? b.so_path : "";
}

wire::CaseRequest relu_case(int64_t id) {
  wire::CaseRequest c;
  c.case_id = uint64_t(id);
  wire::Arg a;
  a.kind = wire::Arg::Kind::Tensor;
  a.tensor = at::randn({64});
  c.args.push_back(a);
  return c;
}

struct SpinnerAndOthers {
  bool spinner_timed_out = false;
  bool others_done_before_spinner = false;
  // From the spinner's request to the others' last reply. Without a bound it cannot be shorter
  // than the spinner's timeout: its deadline starts once it holds the turn, and the turn is given
  // back only after it is killed. A lower bound, so no scheduling luck decides it (which of the two
  // threads returns first after the kill does: the spinner's reaping races the others' cases).
  double others_seconds_after_spinner_request = 0;
  int others_ok = 0;
  std::string error;
};

// The spinner's case starts first and holds the fake GPU's turn; then three cases of the relu
// control run in a child of their own. Which finished first is recorded, not timed.
// `others_lock`: the other kernel's GPU (its own lock file, a second fake device), or the spinner's.
SpinnerAndOthers run_spinner_beside_relu(double bound_seconds, const std::string& lock, std::string others_lock = "") {
  if (others_lock.empty()) others_lock = lock;
  SpinnerAndOthers out;
  const std::string spin_so = build_corpus_kernel("corpus/hostile/infinite_loop.cpp");
  const std::string relu_so = build_corpus_kernel("corpus/controls/relu.cpp");
  if (spin_so.empty() || relu_so.empty()) return (out.error = "a corpus kernel did not build", out);
  SandboxOptions o;
  o.timeout_seconds = 6;
  o.gpu_turn_bound_seconds = bound_seconds;
  o.fake_gpu_turn_lock = lock;
  // Two kernels, each with its own launcher (as two audit lanes or two verifies have).
  SandboxOptions other_options = o;
  other_options.fake_gpu_turn_lock = others_lock;
  Launcher spinner_launcher(o), other_launcher(other_options);
  std::string error;
  auto spinner = spinner_launcher.spawn(&error);
  auto other = spinner ? other_launcher.spawn(&error) : nullptr;
  if (!spinner || !other) return (out.error = "spawn: " + error, out);
  if (spinner->load(spin_so, "forward").kind != Outcome::Kind::Ok || other->load(relu_so, "forward").kind != Outcome::Kind::Ok)
    return (out.error = "load failed", out);
  std::atomic<bool> spinner_done{false};
  const Clock::time_point spinner_request = Clock::now();
  std::thread spin([&] {
    Outcome o = spinner->call(relu_case(1));
    out.spinner_timed_out = o.kind == Outcome::Kind::TimedOut;
    spinner_done = true;
  });
  // Wait until the spinner holds the turn (or, bounded, has already given it up).
  for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
    FileLock probe;
    if (!probe.try_lock(lock, FileLock::Mode::Exclusive) || GpuTurn::overrun_in_progress(lock)) break;
    probe.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 0; i < 3; ++i) out.others_ok += other->call(relu_case(10 + i)).kind == Outcome::Kind::Ok;
  out.others_done_before_spinner = !spinner_done.load();
  out.others_seconds_after_spinner_request = std::chrono::duration<double>(Clock::now() - spinner_request).count();
  spin.join();
  return out;
}

TEST(GpuTurnBound, ASpinningChildNoLongerStallsTheOthersOnItsGpu) {
  const std::string lock = temp_lock_path("fake-gpu-bounded");
  SpinnerAndOthers r = run_spinner_beside_relu(0.3, lock);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.others_ok, 3);
  EXPECT_TRUE(r.others_done_before_spinner) << "the other child's cases waited for the spinner's timeout";
  EXPECT_TRUE(r.spinner_timed_out) << "the spinner keeps its own timeout";
  unlink(lock.c_str());
  unlink((lock + ".overrun").c_str());
}

// The control for the test above: without a bound the same cases queue behind the spinner until
// its timeout, which is what the bound is for (and proves the fake device serializes at all).
TEST(GpuTurnBound, WithoutABoundTheOthersQueueBehindTheSpinner) {
  const std::string lock = temp_lock_path("fake-gpu-unbounded");
  SpinnerAndOthers r = run_spinner_beside_relu(0.0, lock);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.others_ok, 3) << "waiting for the turn moved the other child's deadline";
  // 6 s is run_spinner_beside_relu's timeout; 10 ms covers now_ms()'s truncation to milliseconds.
  EXPECT_GE(r.others_seconds_after_spinner_request, 6.0 - 0.01) << "the others ran while the spinner held the turn";
  EXPECT_TRUE(r.spinner_timed_out);
  unlink(lock.c_str());
}

// Two GPUs (issue 21, here two fake devices): an audit's lanes on GPU 1 take turns on GPU 1's
// lock only, so a kernel spinning on GPU 0, even with no bound at all, never delays them.
TEST(GpuTurnBound, ASpinnerOnOneGpuNeverDelaysAnotherGpu) {
  const std::string gpu0 = temp_lock_path("fake-gpu-0"), gpu1 = temp_lock_path("fake-gpu-1");
  SpinnerAndOthers r = run_spinner_beside_relu(0.0, gpu0, gpu1);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.others_ok, 3);
  EXPECT_TRUE(r.others_done_before_spinner) << "GPU 1's cases waited for GPU 0's spinner";
  EXPECT_TRUE(r.spinner_timed_out);
  unlink(gpu0.c_str());
  unlink(gpu1.c_str());
}

// One kernel (one launcher) overruns with one child at a time: a second spinning gate of the same
// kernel waits for the first to end instead of spinning beside it, so the GPU is shared with one
// spinner, not with every gate it has in flight. Without the rule the second would overrun 0.3 s
// after the first and both would end together; with it the second starts its timeout afterwards.
TEST(GpuTurnBound, AKernelOverrunsWithOneChildAtATime) {
  const std::string lock = temp_lock_path("fake-gpu-siblings");
  const std::string spin_so = build_corpus_kernel("corpus/hostile/infinite_loop.cpp");
  ASSERT_FALSE(spin_so.empty());
  SandboxOptions o;
  o.timeout_seconds = 3;
  o.gpu_turn_bound_seconds = 0.3;
  o.fake_gpu_turn_lock = lock;
  Launcher launcher(o);
  std::string error;
  auto first = launcher.spawn(&error);
  auto second = first ? launcher.spawn(&error) : nullptr;
  ASSERT_TRUE(first && second) << error;
  ASSERT_EQ(first->load(spin_so, "forward").kind, Outcome::Kind::Ok);
  ASSERT_EQ(second->load(spin_so, "forward").kind, Outcome::Kind::Ok);
  Clock::time_point first_end, second_end;
  Outcome a, b;
  std::thread ta([&] {
    a = first->call(relu_case(1));
    first_end = Clock::now();
  });
  for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until && !GpuTurn::overrun_in_progress(lock);)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::thread tb([&] {
    b = second->call(relu_case(2));
    second_end = Clock::now();
  });
  ta.join();
  tb.join();
  EXPECT_EQ(a.kind, Outcome::Kind::TimedOut);
  EXPECT_EQ(b.kind, Outcome::Kind::TimedOut) << "waiting for its sibling moved the second child's deadline";
  EXPECT_GE(std::chrono::duration<double>(second_end - first_end).count(), 1.5)
      << "the second spinning child overran beside the first";
  unlink(lock.c_str());
  unlink((lock + ".overrun").c_str());
}

// One spinning request of a kernel: seconds it held the fake GPU to itself before giving it up.
double held_before_overrun(WorkerSession* child, int64_t case_id, Outcome* out) {
  const GpuTurn::Totals before = GpuTurn::process_totals();
  *out = child->call(relu_case(case_id));
  const GpuTurn::Totals after = GpuTurn::process_totals();
  EXPECT_EQ(after.overruns, before.overruns + 1) << "the spinning request did not give its turn up";
  return after.held_seconds - before.held_seconds;
}

// A case of several calls (determinism, statelessness) gives the turn back between its calls and asks
// again, so what runs between them (device=cuda: the cache released and its poison blocks taken
// afresh, driver calls that need no GPU) never holds the GPU: one turn a call, each call's outputs
// in the reply; a case of one call takes one turn.
TEST(GpuTurn, ARepeatedCaseTakesOneTurnACall) {
  const std::string lock = temp_lock_path("fake-gpu-repeat");
  const std::string relu_so = build_corpus_kernel("corpus/controls/relu.cpp");
  ASSERT_FALSE(relu_so.empty());
  SandboxOptions o;
  o.timeout_seconds = 20;
  o.fake_gpu_turn_lock = lock;
  Launcher launcher(o);
  std::string error;
  auto child = launcher.spawn(&error);
  ASSERT_TRUE(child) << error;
  ASSERT_EQ(child->load(relu_so, "forward").kind, Outcome::Kind::Ok);
  wire::CaseRequest repeated = relu_case(1);
  repeated.repeat = 3;
  GpuTurn::Totals before = GpuTurn::process_totals();
  const Outcome three = child->call(repeated);
  GpuTurn::Totals after = GpuTurn::process_totals();
  ASSERT_EQ(three.kind, Outcome::Kind::Ok) << three.message;
  EXPECT_EQ(three.reply.calls.size(), 3u);
  EXPECT_EQ(after.turns - before.turns, 3) << "the calls of one case did not each take their own turn";
  before = after;
  const Outcome one = child->call(relu_case(2));
  after = GpuTurn::process_totals();
  ASSERT_EQ(one.kind, Outcome::Kind::Ok) << one.message;
  EXPECT_EQ(after.turns - before.turns, 1);
  unlink(lock.c_str());
}

// Once a kernel's request has overrun, its later requests share the GPU after the shorter bound
// (SandboxOptions::gpu_turn_bound_after_overrun_seconds) instead of keeping it for the whole bound
// again; a fresh launcher (another verify) starts that kernel at the full bound. The bounds are
// far apart (2 s against 0.1 s) so a loaded machine's scheduling cannot decide the outcome.
TEST(GpuTurnBound, AKernelThatOverranGetsTheShorterBoundForItsLaterRequests) {
  const std::string lock = temp_lock_path("fake-gpu-after-overrun");
  const std::string spin_so = build_corpus_kernel("corpus/hostile/infinite_loop.cpp");
  ASSERT_FALSE(spin_so.empty());
  SandboxOptions o;
  o.timeout_seconds = 3;
  o.gpu_turn_bound_seconds = 2.0;
  o.gpu_turn_bound_after_overrun_seconds = 0.1;
  o.fake_gpu_turn_lock = lock;
  Launcher launcher(o);
  std::string error;
  auto first = launcher.spawn(&error);
  ASSERT_TRUE(first) << error;
  ASSERT_EQ(first->load(spin_so, "forward").kind, Outcome::Kind::Ok);
  Outcome a, b;
  const double first_held = held_before_overrun(first.get(), 1, &a);
  EXPECT_EQ(a.kind, Outcome::Kind::TimedOut);
  EXPECT_GE(first_held, 1.9) << "the first overrun came before the full bound";
  auto second = launcher.spawn(&error);  // the kernel's next gate
  ASSERT_TRUE(second) << error;
  ASSERT_EQ(second->load(spin_so, "forward").kind, Outcome::Kind::Ok);
  const double second_held = held_before_overrun(second.get(), 2, &b);
  EXPECT_EQ(b.kind, Outcome::Kind::TimedOut) << "the spinner keeps its own timeout";
  EXPECT_LT(second_held, 1.0) << "the kernel kept the GPU for the whole bound again after overrunning";
  Launcher fresh(o);
  auto third = fresh.spawn(&error);
  ASSERT_TRUE(third) << error;
  ASSERT_EQ(third->load(spin_so, "forward").kind, Outcome::Kind::Ok);
  Outcome c;
  EXPECT_GE(held_before_overrun(third.get(), 3, &c), 1.9) << "another launcher inherited the kernel's overrun";
  unlink(lock.c_str());
  unlink((lock + ".overrun").c_str());
}

}  // namespace
}  // namespace gauntlet
