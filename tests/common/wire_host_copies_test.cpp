// CaseReply's host copies (provenance on CUDA) and the sanitizer child's policy bit: optional
// trailing fields, so replies and policies without them keep their bytes.
#include <gtest/gtest.h>

#include "gauntlet/sandbox/sandbox_policy.h"
#include "gauntlet/common/wire.h"

namespace gauntlet::wire {
namespace {

CaseReply sample_reply() {
  CaseReply r;
  r.case_id = 7;
  r.aten_ops = {"aten::empty", "aten::copy_"};
  MemoryFinding f;
  f.kind = MemoryFinding::Kind::InputModified;
  f.buffer = MemoryFinding::Buffer::Input;
  f.index = 0;
  f.bytes = 4;
  r.memory_findings.push_back(f);
  return r;
}

TEST(WireHostCopies, ReplyWithoutCopiesKeepsItsBytes) {
  CaseReply r = sample_reply();
  const std::string plain = encode(r);
  r.host_copies.push_back({"aten::copy_", 0, "cuda:0", 4096});
  const std::string with = encode(r);
  ASSERT_GT(with.size(), plain.size());
  EXPECT_EQ(with.substr(0, plain.size()), plain);  // the section only follows the old fields
  CaseReply back;
  std::string why;
  back.host_copies.push_back({"stale", 1, "x", 1});
  ASSERT_TRUE(decode(plain, &back, &why)) << why;
  EXPECT_TRUE(back.host_copies.empty());
  EXPECT_EQ(back.aten_ops, r.aten_ops);
}

TEST(WireHostCopies, RoundTrip) {
  CaseReply r = sample_reply();
  r.host_copies.push_back({"aten::copy_", 1, "cuda:0", 4096});
  r.host_copies.push_back({"aten::_local_scalar_dense", -1, "cuda:0", 4});
  CaseReply back;
  std::string why;
  ASSERT_TRUE(decode(encode(r), &back, &why)) << why;
  ASSERT_EQ(back.host_copies.size(), 2u);
  EXPECT_EQ(back.host_copies[0].op, "aten::copy_");
  EXPECT_EQ(back.host_copies[0].input, 1);
  EXPECT_EQ(back.host_copies[0].from, "cuda:0");
  EXPECT_EQ(back.host_copies[0].bytes, 4096);
  EXPECT_EQ(back.host_copies[1].op, "aten::_local_scalar_dense");
  EXPECT_EQ(back.host_copies[1].input, -1);
  EXPECT_EQ(back.host_copies[1].bytes, 4);
  EXPECT_EQ(back.memory_findings.size(), 1u);
}

TEST(WireHostCopies, UnknownSectionAndTruncationAreRefused) {
  CaseReply r = sample_reply();
  std::string bytes = encode(r) + std::string(1, '\x09');
  CaseReply back;
  std::string why;
  EXPECT_FALSE(decode(bytes, &back, &why));
  r.host_copies.push_back({"aten::copy_", 0, "cuda:0", 4096});
  const std::string full = encode(r);
  EXPECT_FALSE(decode(full.substr(0, full.size() - 3), &back, &why));
}

// A CUDA worker's phase times (CaseReply::has_phases): a section of their own, beside host copies
// in either order of presence, absent from every other reply.
TEST(WireCasePhases, PhasesRoundTripBesideHostCopiesAndAreAbsentOtherwise) {
  CaseReply r = sample_reply();
  const std::string plain = encode(r);
  r.has_phases = true;
  r.poison_seconds = 0.00125;
  r.to_device_seconds = 0.0005;
  r.from_device_seconds = 0.00075;
  r.check_seconds = 0.0002;
  r.case_seconds = 0.004;
  r.reserve_seconds = 0.003;
  r.poison_release_seconds = 0.0007;
  const std::string with = encode(r);
  ASSERT_GT(with.size(), plain.size());
  EXPECT_EQ(with.substr(0, plain.size()), plain);
  CaseReply back;
  std::string why;
  ASSERT_TRUE(decode(with, &back, &why)) << why;
  EXPECT_TRUE(back.has_phases);
  EXPECT_DOUBLE_EQ(back.poison_seconds, 0.00125);
  EXPECT_DOUBLE_EQ(back.to_device_seconds, 0.0005);
  EXPECT_DOUBLE_EQ(back.from_device_seconds, 0.00075);
  EXPECT_DOUBLE_EQ(back.check_seconds, 0.0002);
  EXPECT_DOUBLE_EQ(back.case_seconds, 0.004);
  EXPECT_DOUBLE_EQ(back.reserve_seconds, 0.003);
  EXPECT_DOUBLE_EQ(back.poison_release_seconds, 0.0007);
  ASSERT_TRUE(decode(plain, &back, &why)) << why;  // a reused reply forgets them
  EXPECT_FALSE(back.has_phases);
  EXPECT_EQ(back.poison_seconds, 0.0);
  EXPECT_EQ(back.case_seconds, 0.0);
  r.host_copies.push_back({"aten::copy_", 0, "cuda:0", 4096});
  ASSERT_TRUE(decode(encode(r), &back, &why)) << why;
  EXPECT_TRUE(back.has_phases);
  ASSERT_EQ(back.host_copies.size(), 1u);
  const std::string both = encode(r);
  EXPECT_FALSE(decode(both.substr(0, both.size() - 5), &back, &why)) << "a cut phase section was accepted";
}

// The caching allocator's driver calls a case made (CaseReply::driver_allocs, driver_frees): their
// own section when counted, with the phases or without; -1 (not counted) after any other reply.
TEST(WireCasePhases, DriverMemoryCallsRoundTripAndAreUncountedOtherwise) {
  CaseReply r = sample_reply();
  const std::string plain = encode(r);
  r.driver_allocs = 3;
  r.driver_frees = 2;
  const std::string counted = encode(r);
  ASSERT_GT(counted.size(), plain.size());
  CaseReply back;
  std::string why;
  ASSERT_TRUE(decode(counted, &back, &why)) << why;
  EXPECT_EQ(back.driver_allocs, 3);
  EXPECT_EQ(back.driver_frees, 2);
  EXPECT_FALSE(back.has_phases);
  r.has_phases = true;
  r.poison_seconds = 0.5;
  ASSERT_TRUE(decode(encode(r), &back, &why)) << why;
  EXPECT_EQ(back.driver_allocs, 3);
  EXPECT_DOUBLE_EQ(back.poison_seconds, 0.5);
  ASSERT_TRUE(decode(plain, &back, &why)) << why;  // a reused reply forgets them
  EXPECT_EQ(back.driver_allocs, -1);
  EXPECT_EQ(back.driver_frees, -1);
  r.driver_allocs = 0;  // zero calls is a count, sent as one
  r.driver_frees = 0;
  ASSERT_TRUE(decode(encode(r), &back, &why)) << why;
  EXPECT_EQ(back.driver_allocs, 0);
  EXPECT_EQ(back.driver_frees, 0);
}

TEST(SandboxPolicyToolIpc, OnlyTheSanitizerChildAddsTheByte) {
  SandboxPolicy p;
  const std::string plain = encode_policy(p);
  p.tool_ipc = true;
  const std::string ipc = encode_policy(p);
  EXPECT_EQ(ipc.substr(0, plain.size()), plain);
  EXPECT_EQ(ipc.size(), plain.size() + 2);  // one byte, as hex
  SandboxPolicy back;
  back.tool_ipc = true;
  ASSERT_TRUE(decode_policy(plain, &back));
  EXPECT_FALSE(back.tool_ipc);
  ASSERT_TRUE(decode_policy(ipc, &back));
  EXPECT_TRUE(back.tool_ipc);
}

}  // namespace
}  // namespace gauntlet::wire
