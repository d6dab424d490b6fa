// A KernelBench problem's contract bound to its own get_inputs(): a mapped module is promised only
// the shapes and dtype get_inputs() builds, so those become its contract's exact dims; every other
// size is outside it (refused or right), never a failure of the problem's own case.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

struct ModuleDescription;

struct ProblemBinding {
  bool bound = false;
  std::map<std::string, int64_t> dims;  // the schema dims get_inputs() fixes
  std::map<std::string, int64_t> ranks; // the rank of each input get_inputs() builds
  // The structure get_inputs() builds into an input (triangular, symmetric, diagonal matrices),
  // bound or not: it is a property of the values, which no shape binding decides.
  std::map<std::string, std::string> structures;
  DType dtype = DType::Float32;         // the dtype of its floating tensors
  std::string why_not;                  // when !bound: one line, why the contract keeps ranks only
  // "x [16, 16384] float32" per input, for the report and the progress line.
  std::string text;
  // How long the reference child took to describe get_inputs() (start, import, one call): the
  // binding's whole cost per kernel, reported so audits can see it.
  double describe_seconds = 0;
  // Whether the reference child described get_inputs() at all. When it did not, gauntlet does not
  // know the contract, and no gate may judge the kernel against a guessed one: a harness error.
  bool described = false;
};

// Matches get_inputs()' tensors (described by the reference child) to the schema inputs the map
// names, in order (manifest.problem_inputs): each tensor's rank picks the input's shape alternative, each plain dim name in
// it takes the tensor's size there. Not bound (why_not) when the tensors and the map disagree in
// count, a dim would take two sizes, a size lies outside the schema's domain, or the case the
// bound dims build does not have get_inputs()' shapes (a dim the schema derives by expression).
ProblemBinding bind_problem_shapes(const OpSchema& schema, const KernelManifest& manifest,
                                   const ModuleDescription& description);

// The structure get_inputs() builds into each schema input (a triangular matrix problem mapped to
// matmul), by the map's input order; empty when the counts differ.
std::map<std::string, std::string> problem_structures(const OpSchema& schema, const KernelManifest& manifest,
                                                      const ModuleDescription& description);

// Writes a binding into the manifest's contract: each bound dim's limits become its size, each
// input's ranks its get_inputs() rank, the dtypes the bound dtype. A manifest whose contract already narrows a dim keeps the narrower.
void apply_problem_binding(const ProblemBinding& b, KernelManifest* m);

// verify's step for a built module whose contract is its problem's (shapes_from_get_inputs): the
// reference child describes get_inputs() once, the binding is made and written into *m (the schema's
// inputs in order stand for problem_inputs when it is empty). Not bound, with why_not, when the
// child cannot describe the module.
ProblemBinding bind_problem_contract(const OpSchema& schema, KernelManifest* m, const SandboxOptions& sandbox);

// The report's environment.contract entry: what the contract holds and where it came from.
nlohmann::json problem_binding_json(const ProblemBinding& b);

}  // namespace gauntlet
