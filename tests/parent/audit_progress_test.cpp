// The audit's summary table: verdict counts, per-gate counts, and unsafe kernels counted apart.
#include "../../src/parent/audit_progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

using nlohmann::json;

namespace {

std::string summary_text(const json& records) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buf, &size);
  gauntlet::print_audit_summary(records, {}, out);
  std::fclose(out);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

json gate(const std::string& name, const std::string& status, const json& scope = nullptr) {
  return {{"name", name}, {"status", status}, {"category", status == "fail" ? "wrong-result" : ""}, {"scope", scope}};
}

}  // namespace

TEST(AuditSummary, UnsafeKernelsAndOutOfContractGatesCountApart) {
  const json records = json::array({
      {{"entry", "a.json"}, {"verdict", "pass"}, {"gates", json::array({gate("layouts", "pass", "in-contract")})}},
      {{"entry", "b.json"}, {"verdict", "unsafe"}, {"gates", json::array({gate("layouts", "fail", "out-of-contract")})}},
      // Stored before gates had scopes: its failure is in-contract.
      {{"entry", "c.json"}, {"verdict", "fail"}, {"gates", json::array({{{"name", "layouts"}, {"status", "fail"}}})}},
  });
  const std::string text = summary_text(records);
  EXPECT_NE(text.find("verdicts: pass 1, unsafe 1, fail 1\n"), std::string::npos) << text;
  char row[128];
  std::snprintf(row, sizeof row, "  %-15s %6d %6d %6d %8d %6d %8d\n", "layouts", 1, 2, 0, 0, 0, 1);
  EXPECT_NE(text.find(row), std::string::npos) << "fail 2, of them outside the contract 1:\n" << text;
  EXPECT_NE(text.find("outside: of fail and error"), std::string::npos) << text;
  EXPECT_NE(text.find("  b.json: unsafe: layouts fail (wrong-result, out-of-contract)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  c.json: fail: layouts fail\n"), std::string::npos) << text;
}
