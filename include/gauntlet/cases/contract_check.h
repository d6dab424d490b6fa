// Whether a kernel's declared contract (its manifest's dtypes, attrs and shapes) is one its op's
// schema can test: checked before anything runs, so a mistyped contract is the user's field error,
// never a harness-error of every gate seconds later.
#pragma once
#include <string>
#include <vector>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

struct ContractIssue {
  std::string field;    // the manifest's field: "dtypes", "attrs/dim", "shapes/N", "attrs"
  std::string message;  // what is wrong, naming the schema's domain
};

// Checks `manifest` against `schema` and normalises its attribute values to the schema's types (a
// whole JSON number for a double attribute is that double; 2.0 for an int64 one is 2). Returns
// every issue found, in field order; empty when the contract admits at least one case.
std::vector<ContractIssue> check_contract(const OpSchema& schema, KernelManifest* manifest);

// The one-line message for an issue: "k.json: field 'attrs/dim': ..." for a manifest's field,
// "--attr dim: ..." or "--dtypes: ..." for what a flag gave.
std::string contract_error(const KernelManifest& manifest, const ContractIssue& issue);

}  // namespace gauntlet
