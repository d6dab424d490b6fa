// The provenance gate's CUDA rule (a CUDA kernel must not compute on the host): the message for the
// device-to-host copies the worker saw inside the call.
#include <gtest/gtest.h>

#include "gauntlet/common/wire.h"

namespace gauntlet::provenance_gate {
std::string host_copy_message(const std::vector<std::string>& input_names, const std::vector<wire::HostCopy>& copies);
}  // namespace gauntlet::provenance_gate

namespace {

using gauntlet::provenance_gate::host_copy_message;
using gauntlet::wire::HostCopy;

TEST(ProvenanceHostCopy, NoCopyNoMessage) { EXPECT_EQ(host_copy_message({"'x'"}, {}), ""); }

TEST(ProvenanceHostCopy, NamesTheInputDirectionAndSize) {
  const std::string m = host_copy_message({"'x'", "'w'"}, {{"aten::copy_", 0, "cuda:0", 4096}});
  EXPECT_EQ(m,
            "the kernel copied input 'x' (cuda:0 \u2192 cpu, 4096 bytes, aten::copy_) to the host inside the call: "
            "a CUDA kernel must compute on the device");
}

TEST(ProvenanceHostCopy, OtherBuffersAndCounts) {
  const std::string m = host_copy_message({"'x'"}, {{"aten::_local_scalar_dense", -1, "cuda:0", 4},
                                                    {"aten::copy_", 0, "cuda:0", 64}});
  EXPECT_NE(m.find("copied a device tensor (cuda:0 \u2192 cpu, 4 bytes, aten::_local_scalar_dense)"), std::string::npos) << m;
  EXPECT_NE(m.find("and made 1 more device-to-host copies"), std::string::npos) << m;
  // An index past the schema's inputs is still named.
  EXPECT_NE(host_copy_message({}, {{"aten::copy_", 2, "cuda:0", 8}}).find("input 2 "), std::string::npos);
}

}  // namespace
