// Test-binary environment: points gauntlet at this build's worker, schemas and kernel cache, whether
// or not ctest passed the variables (an explicit environment still wins).
#include <cstdlib>

namespace {
struct TestEnvironment {
  TestEnvironment() {
    setenv("GAUNTLET_WORKER", GAUNTLET_TEST_WORKER, 0);
    setenv("GAUNTLET_SCHEMAS", GAUNTLET_SOURCE_DIR "/opschemas", 0);
    setenv("GAUNTLET_CACHE", GAUNTLET_TEST_CACHE, 0);
  }
} test_environment;
}  // namespace
