// classify_cuda_error: the messages the worker reports for CUDA failures (as c10 and the worker's
// "CUDA error after the call: " prefix write them) map to the right category and stickiness.
#include "gauntlet/sandbox/cuda_errors.h"

#include <gtest/gtest.h>

namespace gauntlet {
namespace {

void expect(const std::string& msg, Category cat, bool lost) {
  CudaErrorClass c = classify_cuda_error(msg);
  EXPECT_TRUE(c.is_cuda_error) << msg;
  EXPECT_EQ(category_name(c.category), std::string(category_name(cat))) << msg;
  EXPECT_EQ(c.context_lost, lost) << msg;
}

TEST(CudaErrorCategory, StickyLaunchFailuresAreCrashesThatLoseTheContext) {
  expect("CUDA error after the call: CUDA error: an illegal memory access was encountered", Category::Crash, true);
  expect("CUDA error: an illegal memory access was encountered", Category::Crash, true);  // a later launch check
  expect("CUDA error after the call: CUDA error: unspecified launch failure", Category::Crash, true);
  expect("CUDA error after the call: CUDA error: misaligned address", Category::Crash, true);
  expect("CUDA error: an illegal instruction was encountered", Category::Crash, true);
  expect("CUDA error: device-side assert triggered", Category::Crash, true);
  expect("worker error: CUDA error: an illegal memory access was encountered", Category::Crash, true);
}

TEST(CudaErrorCategory, WatchdogTimeoutIsATimeout) {
  expect("CUDA error after the call: CUDA error: the launch timed out and was terminated", Category::Timeout, true);
}

TEST(CudaErrorCategory, OutOfMemoryKeepsTheContext) {
  expect("out of memory: CUDA out of memory. Tried to allocate 1024.00 GiB (GPU 0; 139.81 GiB total capacity)",
         Category::OutOfMemory, false);
  expect("CUDA error after the call: CUDA error: out of memory", Category::OutOfMemory, false);
}

TEST(CudaErrorCategory, BadLaunchesAreRuntimeErrors) {
  expect("CUDA error: invalid configuration argument", Category::RuntimeError, false);
  expect("CUDA error: too many resources requested for launch", Category::RuntimeError, false);
  expect("CUDA error: no kernel image is available for execution on the device", Category::RuntimeError, false);
  expect("CUDA error: invalid argument", Category::RuntimeError, false);
}

TEST(CudaErrorCategory, OtherMessagesAreNotCudaErrors) {
  for (const char* m : {"float32 CUDA input expected", "bad arguments: the entry takes (Tensor)",
                        "Expected all tensors to be on the same device", ""}) {
    CudaErrorClass c = classify_cuda_error(m);
    EXPECT_FALSE(c.is_cuda_error) << m;
    EXPECT_FALSE(c.context_lost) << m;
    EXPECT_EQ(c.category, Category::None) << m;
  }
}

}  // namespace
}  // namespace gauntlet
