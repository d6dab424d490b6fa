// The Linter behind lint_schema, its rules split by theme: schema_lint.cpp (names, dims, expressions),
// lint_inputs.cpp, lint_outputs.cpp and lint_dry_run.cpp (src/schema only).
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gauntlet/schema/schema.h"
#include "json_pointer.h"

namespace gauntlet::schema_internal {

bool is_integer_dtype(DType d);
std::string shape_text(const std::vector<std::string>& p);  // "[M,N]"

class Linter {
 public:
  Linter(const OpSchema& s, const std::vector<std::string>& oracles) : s_(s), oracles_(oracles) {}

  std::vector<SchemaIssue> run();

 private:
  const OpSchema& s_;
  const std::vector<std::string>& oracles_;
  std::vector<SchemaIssue> issues_;
  std::set<std::pair<std::string, std::string>> seen_;

  void issue(const std::string& field, const std::string& msg) {
    if (seen_.insert({field, msg}).second) issues_.push_back({s_.source_file, field, msg});
  }

  bool is_dim(const std::string& n) const { return s_.dims.count(n) > 0; }
  const AttrSpec* attr(const std::string& n) const { return s_.attribute(n); }
  const InputSpec* input(const std::string& n) const { return s_.input(n); }
  const OutputSpec* output(const std::string& n) const {
    for (const auto& o : s_.outputs)
      if (o.name == n) return &o;
    return nullptr;
  }

  // Checks shared by several sections.
  void check_expr(const std::string& e, const std::string& field, bool cost = false);
  void check_values(const ValueDomain& v, const std::string& p, const std::vector<DType>* dtypes);
  void check_quantizable(const ValueDomain& v, const std::string& p);
  void check_structure(const InputSpec& in, const std::string& p);
  bool type_matches(const AttrValue& v, const std::string& type) const;
  void check_attr_value(const AttrSpec& a, const AttrValue& v, const std::string& field, const char* what);

  // The sections, in the order run() checks them.
  void names();
  void dims();
  void inputs();
  void attributes();
  void exprs_lists();
  void outputs();
  void oracle_and_tolerance();
  void semantics();
  void reduction_and_cost();
  void error_inputs();
  void forbidden();
  void dry_run();
  void dry_eval(std::map<std::string, int64_t> vars, const std::map<std::string, int64_t>& all_dims,
                const ShapeMap& shapes, const std::string& desc, int elem);
};

}  // namespace gauntlet::schema_internal
