// LoadRequest's device field: a CPU request encodes to the same bytes as before the field
// existed (the field is an optional trailing string), a CUDA one round-trips, others are refused.
#include <gtest/gtest.h>

#include "gauntlet/common/wire.h"

namespace gauntlet::wire {
namespace {

TEST(WireDevice, CpuLoadRequestBytesHaveNoDeviceField) {
  LoadRequest req;
  req.so_path = "/k.so";
  req.entry = "forward";
  const std::string cpu = encode(req);
  req.device = "cuda";
  const std::string cuda = encode(req);
  // The CUDA encoding is the CPU one followed by the device string.
  ASSERT_GT(cuda.size(), cpu.size());
  EXPECT_EQ(cuda.substr(0, cpu.size()), cpu);
  LoadRequest back;
  std::string why;
  back.device = "cuda";
  ASSERT_TRUE(decode(cpu, &back, &why)) << why;
  EXPECT_EQ(back.device, "cpu");
  ASSERT_TRUE(decode(cuda, &back, &why)) << why;
  EXPECT_EQ(back.device, "cuda");
}

TEST(WireDevice, UnknownDeviceIsRefused) {
  LoadRequest req;
  req.device = "tpu";
  LoadRequest back;
  std::string why;
  EXPECT_FALSE(decode(encode(req), &back, &why));
}

TEST(WireDevice, LoadReplyDeviceInfoIsAnOptionalTrailingField) {
  LoadReply rep;
  rep.ok = true;
  rep.signature = "Tensor(Tensor)";
  rep.sandbox_notes = "isolation: seccomp";
  const std::string cpu = encode(rep);
  rep.device_info = R"({"name":"NVIDIA H200"})";
  const std::string cuda = encode(rep);
  ASSERT_GT(cuda.size(), cpu.size());
  EXPECT_EQ(cuda.substr(0, cpu.size()), cpu);  // a CPU reply's bytes are what they were before
  LoadReply back;
  std::string why;
  back.device_info = "stale";
  ASSERT_TRUE(decode(cpu, &back, &why)) << why;
  EXPECT_EQ(back.device_info, "");
  ASSERT_TRUE(decode(cuda, &back, &why)) << why;
  EXPECT_EQ(back.device_info, rep.device_info);
  EXPECT_EQ(back.sandbox_notes, rep.sandbox_notes);
}

TEST(WireDevice, HardwareQueuesAreAnOptionalTrailingField) {
  LoadRequest req;
  req.device = "cuda";
  const std::string plain = encode(req);
  req.hardware_queues = 1;
  const std::string one_queue = encode(req);
  ASSERT_GT(one_queue.size(), plain.size());
  EXPECT_EQ(one_queue.substr(0, plain.size()), plain);  // device first, then an empty build_dir
  LoadRequest back;
  std::string why;
  back.hardware_queues = 7;
  ASSERT_TRUE(decode(plain, &back, &why)) << why;
  EXPECT_EQ(back.hardware_queues, 0u);
  ASSERT_TRUE(decode(one_queue, &back, &why)) << why;
  EXPECT_EQ(back.hardware_queues, 1u);
  EXPECT_EQ(back.device, "cuda");
  EXPECT_EQ(back.build_dir, "");
  req.hardware_queues = 5000;  // no driver has that many; a corrupt frame
  EXPECT_FALSE(decode(encode(req), &back, &why));
}

}  // namespace
}  // namespace gauntlet::wire
