// Tests of the parent/worker wire format: frames, garbage detection, tensors with their exact views.
#include <gtest/gtest.h>
#include <unistd.h>

#include "gauntlet/common/wire.h"

using namespace gauntlet;
using namespace gauntlet::wire;

namespace {

struct Pipe {
  int fds[2];
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    close(fds[0]);
    close(fds[1]);
  }
};

TEST(Wire, FrameRoundTrip) {
  Pipe p;
  ASSERT_TRUE(write_frame(p.fds[1], FrameType::Case, "hello"));
  Frame f;
  std::string why;
  ASSERT_EQ(read_frame(p.fds[0], &f, now_ms() + 1000, &why), ReadStatus::Ok);
  EXPECT_EQ(f.type, FrameType::Case);
  EXPECT_EQ(f.payload, "hello");
}

TEST(Wire, GarbageIsDetectedNotTrusted) {
  Pipe p;
  const char junk[] = "this is not a frame at all, just noise from a kernel";
  ASSERT_GT(write(p.fds[1], junk, sizeof junk), 0);
  Frame f;
  std::string why;
  EXPECT_EQ(read_frame(p.fds[0], &f, now_ms() + 1000, &why), ReadStatus::Garbage);
  EXPECT_FALSE(why.empty());
}

// The trailer is FNV-1a 64 over the payload's little-endian 64-bit words, then its last bytes
// (the Python worker's checksum in python/gauntlet_worker/wire.py and src/pyworker/fnv.cpp is the
// same function: a frame either side writes must pass the other's check).
TEST(Wire, TheChecksumIsFnvOverLittleEndianWordsThenBytes) {
  const std::string payload = "gauntlet wire";  // one word and five bytes
  uint64_t expected = 1469598103934665603ull;
  uint64_t word = 0;
  for (int i = 7; i >= 0; --i) word = (word << 8) | static_cast<unsigned char>(payload[size_t(i)]);
  expected = (expected ^ word) * 1099511628211ull;
  for (size_t i = 8; i < payload.size(); ++i) expected = (expected ^ static_cast<unsigned char>(payload[i])) * 1099511628211ull;
  Pipe p;
  ASSERT_TRUE(write_frame(p.fds[1], FrameType::Case, payload));
  char raw[64];
  const ssize_t n = read(p.fds[0], raw, sizeof raw);
  ASSERT_EQ(n, ssize_t(16 + payload.size() + 8));
  uint64_t trailer = 0;
  for (int i = 7; i >= 0; --i) trailer = (trailer << 8) | static_cast<unsigned char>(raw[16 + payload.size() + size_t(i)]);
  EXPECT_EQ(trailer, expected);
}

TEST(Wire, CorruptedPayloadFailsChecksum) {
  Pipe p;
  Writer h;
  h.u32(kMagic);
  h.u32(uint32_t(FrameType::CaseReply));
  h.u64(3);
  h.raw("abc", 3);
  h.u64(12345);  // wrong checksum
  ASSERT_GT(write(p.fds[1], h.bytes().data(), h.bytes().size()), 0);
  Frame f;
  std::string why;
  EXPECT_EQ(read_frame(p.fds[0], &f, now_ms() + 1000, &why), ReadStatus::Garbage);
  EXPECT_NE(why.find("checksum"), std::string::npos);
}

// A malformed header says which field is wrong: noise on the channel (bad magic) is a different
// fault from a real frame too large for the wire (a reference's multi-GiB reply).
TEST(Wire, AMalformedHeaderNamesTheFieldThatIsWrong) {
  const auto header_why = [](uint32_t magic, uint32_t type, uint64_t len) {
    Pipe p;
    Writer h;
    h.u32(magic);
    h.u32(type);
    h.u64(len);
    EXPECT_GT(write(p.fds[1], h.bytes().data(), h.bytes().size()), 0);
    Frame f;
    std::string why;
    EXPECT_EQ(read_frame(p.fds[0], &f, now_ms() + 1000, &why), ReadStatus::Garbage);
    return why;
  };
  EXPECT_NE(header_why(kMagic ^ 1u, uint32_t(FrameType::CaseReply), 3).find("bad magic"), std::string::npos);
  EXPECT_NE(header_why(kMagic, 99, 3).find("unknown frame type 99"), std::string::npos);
  const std::string big = header_why(kMagic, uint32_t(FrameType::CaseReply), kMaxFrameBytes + 1);
  EXPECT_NE(big.find("over the wire's limit of 64 GiB"), std::string::npos) << big;
}

TEST(Wire, EofAndTimeout) {
  Pipe p;
  Frame f;
  std::string why;
  EXPECT_EQ(read_frame(p.fds[0], &f, now_ms() + 50, &why), ReadStatus::Timeout);
  close(p.fds[1]);
  p.fds[1] = dup(p.fds[0]);  // keep the destructor balanced
  Pipe q;
  close(q.fds[1]);
  q.fds[1] = dup(q.fds[0]);
  int r[2];
  ASSERT_EQ(pipe(r), 0);
  close(r[1]);
  EXPECT_EQ(read_frame(r[0], &f, now_ms() + 1000, &why), ReadStatus::Eof);
  close(r[0]);
}

TEST(Wire, NonContiguousTensorKeepsItsView) {
  at::Tensor base = at::arange(24, at::kFloat).reshape({4, 6});
  at::Tensor view = base.t().slice(0, 1, 5, 2);  // transposed and stepped, with a storage offset
  Writer w;
  put_tensor(w, view);
  Reader r(w.bytes());
  at::Tensor back;
  std::string why;
  ASSERT_TRUE(get_tensor(r, &back, &why)) << why;
  EXPECT_EQ(back.sizes(), view.sizes());
  EXPECT_EQ(back.strides(), view.strides());
  EXPECT_EQ(back.storage_offset(), view.storage_offset());
  EXPECT_TRUE(at::equal(back, view));
}

TEST(Wire, ExpandedTensorSendsOnlyItsStorage) {
  at::Tensor row = at::arange(5, at::kHalf);
  at::Tensor expanded = row.expand({1000, 5});
  Writer w;
  put_tensor(w, expanded);
  EXPECT_LT(w.bytes().size(), 200u);
  Reader r(w.bytes());
  at::Tensor back;
  std::string why;
  ASSERT_TRUE(get_tensor(r, &back, &why));
  EXPECT_EQ(back.stride(0), 0);
  EXPECT_TRUE(at::equal(back, expanded));
}

TEST(Wire, ViewOutsideStorageIsRejected) {
  Writer w;
  w.u8(uint8_t(DType::Float32));
  w.u8(1);
  w.i64(10);  // 10 elements
  w.i64(1);
  w.i64(0);
  w.u64(16);  // but only 4 in storage
  w.raw("0123456789abcdef", 16);
  Reader r(w.bytes());
  at::Tensor t;
  std::string why;
  EXPECT_FALSE(get_tensor(r, &t, &why));
  EXPECT_NE(why.find("exceeds"), std::string::npos);
}

TEST(Wire, CaseMessagesRoundTrip) {
  CaseRequest req;
  req.case_id = 42;
  req.repeat = 3;
  Arg t;
  t.tensor = at::randn({3, 4});
  Arg i;
  i.kind = Arg::Kind::Int;
  i.i = -1;
  Arg d;
  d.kind = Arg::Kind::Double;
  d.d = 1e-5;
  Arg b;
  b.kind = Arg::Kind::Bool;
  b.b = true;
  req.args = {t, i, d, b};
  CaseRequest back;
  std::string why;
  ASSERT_TRUE(decode(encode(req), &back, &why)) << why;
  EXPECT_EQ(back.case_id, 42u);
  EXPECT_EQ(back.repeat, 3u);
  ASSERT_EQ(back.args.size(), 4u);
  EXPECT_TRUE(at::equal(back.args[0].tensor, t.tensor));
  EXPECT_EQ(back.args[1].i, -1);
  EXPECT_EQ(back.args[2].d, 1e-5);
  EXPECT_TRUE(back.args[3].b);

  CaseReply rep;
  rep.case_id = 42;
  CallOutputs co;
  co.outputs = {at::ones({2}, at::kBFloat16)};
  co.devices = {"cpu"};
  co.alias_input = {0};
  co.alias_output = {-1};
  co.output_contiguous = {true};
  rep.calls = {co};
  rep.inputs_unchanged = false;
  rep.aten_ops = {"aten::empty", "aten::sum"};
  CaseReply rback;
  ASSERT_TRUE(decode(encode(rep), &rback, &why)) << why;
  ASSERT_EQ(rback.calls.size(), 1u);
  EXPECT_EQ(rback.calls[0].alias_input[0], 0);
  EXPECT_EQ(rback.calls[0].alias_output[0], -1);
  EXPECT_FALSE(rback.inputs_unchanged);
  EXPECT_EQ(rback.aten_ops, rep.aten_ops);
  EXPECT_TRUE(at::equal(rback.calls[0].outputs[0], co.outputs[0]));

  // Truncation anywhere is detected.
  std::string bytes = encode(rep);
  for (size_t cut : {size_t(1), bytes.size() / 2, bytes.size() - 1}) {
    CaseReply partial;
    EXPECT_FALSE(decode(bytes.substr(0, cut), &partial, &why));
  }
}

}  // namespace

TEST(Wire, LoadRequestCarriesOperatorRecording) {
  LoadRequest req;
  req.so_path = "/k.so";
  req.entry = "forward";
  req.record_ops = true;
  LoadRequest back;
  std::string why;
  ASSERT_TRUE(decode(encode(req), &back, &why)) << why;
  EXPECT_TRUE(back.record_ops);
  req.record_ops = false;
  ASSERT_TRUE(decode(encode(req), &back, &why)) << why;
  EXPECT_FALSE(back.record_ops);
}

TEST(Wire, MemoryGateFieldsRoundTrip) {
  LoadRequest req;
  req.so_path = "/k.so";
  req.entry = "forward";
  req.guard_bytes = 64;
  LoadRequest back;
  std::string why;
  ASSERT_TRUE(decode(encode(req), &back, &why)) << why;
  EXPECT_EQ(back.guard_bytes, 64u);
  // A guard that would break the 64-byte alignment of the pointers handed out is refused.
  req.guard_bytes = 48;
  EXPECT_FALSE(decode(encode(req), &back, &why));

  CaseReply rep;
  rep.case_id = 3;
  MemoryFinding f;
  f.kind = MemoryFinding::Kind::CanaryBefore;
  f.buffer = MemoryFinding::Buffer::Output;
  f.index = 1;
  f.offset = -4;
  f.bytes = 2;
  f.buffer_bytes = 4000;
  MemoryFinding g;
  g.kind = MemoryFinding::Kind::InputModified;
  g.buffer = MemoryFinding::Buffer::Input;
  g.index = 0;
  g.offset = 8;
  g.bytes = 12;
  g.buffer_bytes = 64;
  rep.memory_findings = {f, g};
  CaseReply rback;
  ASSERT_TRUE(decode(encode(rep), &rback, &why)) << why;
  ASSERT_EQ(rback.memory_findings.size(), 2u);
  EXPECT_EQ(rback.memory_findings[0].kind, MemoryFinding::Kind::CanaryBefore);
  EXPECT_EQ(rback.memory_findings[0].buffer, MemoryFinding::Buffer::Output);
  EXPECT_EQ(rback.memory_findings[0].index, 1);
  EXPECT_EQ(rback.memory_findings[0].offset, -4);
  EXPECT_EQ(rback.memory_findings[0].bytes, 2);
  EXPECT_EQ(rback.memory_findings[0].buffer_bytes, 4000);
  EXPECT_EQ(rback.memory_findings[1].kind, MemoryFinding::Kind::InputModified);
  EXPECT_EQ(rback.memory_findings[1].index, 0);
  // A finding of an unknown kind is garbage, not trusted.
  rep.memory_findings.resize(1);
  std::string bytes = encode(rep);
  bytes[bytes.size() - 30] = char(9);  // the kind byte of the last (only) finding: 1+1+4+3*8 bytes
  EXPECT_FALSE(decode(bytes, &rback, &why));
}

// Every malformed case reply says what was malformed (issue 15: a reply refused with an empty
// reason hid which check failed); a zero-size output, as the Python worker encodes it, is valid.
TEST(Wire, MalformedCaseRepliesNameWhatIsWrongAndZeroSizeOutputsDecode) {
  CaseReply rep;
  rep.case_id = 7;
  CallOutputs co;
  co.outputs = {at::empty({0, 5}, at::kFloat)};
  co.devices = {"cpu"};
  co.alias_input = {-1};
  co.alias_output = {-1};
  co.output_contiguous = {true};
  co.alias_previous_call = {-1};
  rep.calls = {co};
  std::string why;
  CaseReply back;
  ASSERT_TRUE(decode(encode(rep), &back, &why)) << why;
  EXPECT_EQ(back.calls.at(0).outputs.at(0).sizes(), at::IntArrayRef({0, 5}));
  // The Python worker's zero-element tensor: sizes, contiguous strides, offset 0, no bytes.
  const std::string bytes = encode(rep);
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    CaseReply partial;
    std::string reason;
    EXPECT_FALSE(decode(bytes.substr(0, cut), &partial, &reason)) << cut;
    EXPECT_FALSE(reason.empty()) << "cut at " << cut << " of " << bytes.size();
  }
  // A view past its storage names the element and the storage size, and which output it is.
  rep.calls[0].outputs = {at::ones({6}, at::kFloat).as_strided({3}, {2}, 0)};
  std::string bad = encode(rep);
  CaseReply corrupt;
  // The storage length field (u64 after sizes, strides and offset) shrunk from 24 to 8 bytes.
  const std::string whole("\x18\0\0\0\0\0\0\0", 8), eight("\x08\0\0\0\0\0\0\0", 8);
  const size_t at = bad.find(whole);
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 8, eight);
  bad.erase(at + 8, 16);
  EXPECT_FALSE(decode(bad, &corrupt, &why));
  EXPECT_NE(why.find("output 0 of call 0: tensor view exceeds its storage: it reaches element 4 of a storage of 2"), std::string::npos) << why;
}

// "None of these dtypes exists here" is one rule: an empty list constrains nothing, one available
// dtype is enough, and float8 counts as missing exactly where this LibTorch lacks it.
TEST(WireDtypes, NoneAvailableOnlyWhereEveryListedDtypeIsMissing) {
  EXPECT_FALSE(none_available({}));
  EXPECT_FALSE(none_available({DType::Float32}));
  EXPECT_FALSE(none_available({DType::Float8E4M3, DType::Float32}));
  const bool has_float8 = dtype_unavailable(DType::Float8E4M3).empty();
  EXPECT_EQ(none_available({DType::Float8E4M3}), !has_float8);
  if (!has_float8)
    EXPECT_NE(dtype_unavailable(DType::Float8E4M3).find("has no float8_e4m3fn"), std::string::npos);
}

// NaN tests need a dtype ATen implements isnan for: float8 is widened (its values all exact in
// float32), everything else comes back as it is.
TEST(WireDtypes, NanTestableWidensOnlyFloat8) {
  const at::Tensor f = at::tensor({1.0f, std::nanf("")});
  EXPECT_EQ(nan_testable(f).scalar_type(), at::kFloat);
  EXPECT_TRUE(nan_testable(f).is_same(f));
  const at::Tensor h = f.to(at::kHalf), i = at::tensor({int8_t(1)});
  EXPECT_EQ(nan_testable(h).scalar_type(), at::kHalf);
  EXPECT_EQ(nan_testable(i).scalar_type(), at::kChar);  // one byte, but not floating: untouched
  const auto f8 = to_scalar_type(DType::Float8E4M3);
  if (!f8) GTEST_SKIP() << dtype_unavailable(DType::Float8E4M3);
  const at::Tensor e = f.to(*f8);
  const at::Tensor w = nan_testable(e);
  EXPECT_EQ(w.scalar_type(), at::kFloat);
  EXPECT_FALSE(at::isnan(w[0]).item<bool>());
  EXPECT_TRUE(at::isnan(w[1]).item<bool>());
}
