// A case's scope (inside or outside the kernel's declared contract) and the kernel verdict the
// gates' scoped verdicts add up to (SPEC "Kernel forms": fail, unsafe, pass).
#pragma once
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/schema/manifest.h"

namespace gauntlet {

inline constexpr const char* kInContract = "in-contract";
inline constexpr const char* kOutOfContract = "out-of-contract";
// A passing gate that ran cases of both scopes.
inline constexpr const char* kMixedScope = "in-contract+out-of-contract";

// Why `c` lies outside the kernel's declared contract, "" when it lies inside: a case the shapes
// gate made outside it (an error input, a probe past a limit: Case::outside_contract), or a dtype,
// dim size, rank, layout or dim equality the manifest does not declare. An absent field is the
// schema's whole domain.
std::string outside_contract_reason(const KernelManifest& m, const Case& c);

// Counts a case a gate runs under its scope, and says whether it is outside the contract.
bool note_case_scope(GateContext& ctx, const Case& c);

// The scope a finished gate reports: a failing gate's is its deciding case's (set where the failure
// was judged; "" there means nothing proved it outside, so in-contract), a passing gate's is that
// of the cases it ran (kMixedScope for both), a skipped gate's none.
void settle_scope(GateVerdict& v, int cases_in, int cases_out);

// The kernel verdict: "fail" when an in-contract gate fails, else "error" when one errs (a
// harness-error, whatever its scope, is an error: gauntlet's, never the kernel's), else "unsafe"
// when a gate failed or erred only outside the contract, else "pass".
std::string kernel_verdict(const std::vector<GateVerdict>& gates);

// Whether a gate's failure counts against the kernel inside its contract (fail, error or
// harness-error not marked out-of-contract).
bool fails_in_contract(const GateVerdict& v);

}  // namespace gauntlet
