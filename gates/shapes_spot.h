// A point of the shapes gate's case space and how it becomes a valid case within the budget.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/cases/gate.h"
#include "shapes_budget.h"

namespace gauntlet::shapes_gate {

// Everything that determines an in-contract case.
struct Spot {
  std::map<std::string, int64_t> dims;
  size_t alt = 0;
  AttrMap attrs;
  DType dtype = DType::Float32;
  uint64_t seed = 0;
};

// The case's label after its shapes or attributes were overridden (as CaseSpace::build writes it).
std::string label_of(const Case& c);

// The choices of one attribute for a case whose input `dim_of` has rank `rank`; the first is the
// default (or the manifest's fixed value), so RapidCheck shrinks toward it.
std::vector<AttrValue> attr_choices(const AttrSpec& a, const KernelManifest& m, int64_t rank);

// The rank input `name` takes in shape alternative `alt` (the first input takes `alt`).
int64_t rank_of(const OpSchema& s, const std::string& name, size_t alt);

// Sets dim `d` and every dim the kernel's contract declares equal to it (equal_dims): a square
// matmul's held-out sizes move M, K and N together, where CaseSpace::build would take their smallest.
void set_tied(const CaseSpace& space, std::map<std::string, int64_t>& dims, const std::string& d, int64_t v);

// A small size of a dim's schema domain (3, the smallest odd size past 1, where the domain holds
// it): the other dims of a probe that lies outside the contract already.
int64_t small_size(const DimDomain& dom);

// Whether `a` and `b` are one dim or in one group of the contract's equal dims.
bool tied(const CaseSpace& space, const std::string& a, const std::string& b);

bool make_case(const CaseSpace& space, const Spot& s, Case* c, std::string* why);

// Dims that change the case (perturbing one changes a shape or an index range): the others are
// free and must not count as "the large dim" or be cut down.
std::set<std::string> used_dims(const CaseSpace& space, const Spot& s, const Case& base);

// Makes `s` a valid case within `budget`: a violated schema constraint (conv2d's kernel larger than
// the padded input) lowers one dim to its floor; then the largest used dim keeps its size while the
// others are cut down through their candidates, and only then the largest itself.
bool fit(const CaseSpace& space, const Budget& budget, Spot* s, Case* c, std::string* why);

// The spot of `dims` in shape alternative `alt`, its dtype and attribute choices rotating with `k`.
Spot spot_for(GateContext& ctx, const std::map<std::string, int64_t>& dims, size_t alt, uint64_t k);

}  // namespace gauntlet::shapes_gate
