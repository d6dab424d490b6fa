// gauntlet corpus, planted bug: hash_join whose build side keeps one row per key.
// PLANTED BUG: the hash table on the build side (right) has one slot per key and an insert
// overwrites it (table[key] = j: the last row of each key wins), the table a unique-key join (a
// primary-key lookup) would use. Each left row then meets at most one right row: every pair with
// an earlier right row of the same key is missing, so many-to-many matches lose pairs. Where the
// right keys are distinct the output is exact: the KernelBench-style check's keys (uniform over
// [0, 2^40)) never repeat; zipf, all-equal and small-range keys repeat on every side.
#include <torch/torch.h>

#include <cstdint>
#include <unordered_map>

namespace {

void check_keys(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.defined() && t.device().is_cpu() && t.layout() == at::kStrided, "hash_join: ", name,
              " must be a dense CPU tensor");
  TORCH_CHECK(t.scalar_type() == at::kLong, "hash_join: ", name, " must be int64");
  TORCH_CHECK(t.dim() == 1, "hash_join: ", name, " must be 1-D");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& left, const torch::Tensor& right) {
  check_keys(left, "left");
  check_keys(right, "right");
  const torch::Tensor lc = left.contiguous(), rc = right.contiguous();
  const int64_t N = lc.size(0), M = rc.size(0);
  const int64_t* l = lc.data_ptr<int64_t>();
  const int64_t* r = rc.data_ptr<int64_t>();
  std::unordered_map<int64_t, int64_t> slot;  // key -> one right row
  slot.reserve(size_t(M));
  for (int64_t j = 0; j < M; ++j) slot[r[j]] = j;  // BUG: a later row of the key overwrites the earlier
  int64_t P = 0;
  for (int64_t i = 0; i < N; ++i) P += slot.count(l[i]) ? 1 : 0;
  torch::Tensor out = torch::empty({P, 2}, lc.options());
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < N; ++i) {
    const auto it = slot.find(l[i]);
    if (it == slot.end()) continue;
    *o++ = i;
    *o++ = it->second;
  }
  return out;
}
