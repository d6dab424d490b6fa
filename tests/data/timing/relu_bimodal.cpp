// A correct relu whose time jumps between calls: every other call of each group of like calls the
// timing gate forms also spins for six times its own work. Not a bug (every output is right) but
// a run no timer can hold steady: the timing gate must time it again and then report it unsteady
// instead of quoting its figures as if they were sound (tests/gates/timing_test.cpp).
//
// Why not a random choice: with a few calls per group, chance made a group look steady now and
// then, and the test flaked. The gate groups the timed calls by input set and by order (first or
// second of an interleaved pair: timing::steadiness), so call k of one input set alternates
// between the two groups of that set. Slow exactly when floor(k / 2) is odd makes the members of
// each group alternate slow, fast, slow, ... whatever the number of untimed calls before: every
// group's relative spread is far above the 25% limit in every run, retimes included.
#include <torch/torch.h>

#include <chrono>
#include <map>
#include <utility>

torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.device().is_cpu(), "this kernel runs on the CPU only");
  const auto t0 = std::chrono::steady_clock::now();
  torch::Tensor out = torch::empty_like(x.contiguous());
  const torch::Tensor xc = x.contiguous();
  double first = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_bimodal", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    if (xc.numel() > 0) first = static_cast<double>(in[0]);
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = (static_cast<double>(in[i]) < 0.0) ? scalar_t(0.0f) : in[i];
  });
  // Input sets are told apart by their size and first value (distinct random inputs).
  static std::map<std::pair<int64_t, double>, int64_t> calls_of_set;
  const int64_t k = calls_of_set[{xc.numel(), first}]++;
  if ((k / 2) % 2 == 1) {
    const auto work = std::chrono::steady_clock::now() - t0;
    while (std::chrono::steady_clock::now() - t0 < 7 * work) {
    }
  }
  return out;
}
