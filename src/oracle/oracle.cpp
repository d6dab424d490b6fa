// The fp64 oracle entry point: dispatch table, input/attribute checks, and error capture.
#include "gauntlet/oracle/oracle.h"

#include <c10/util/Exception.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "gauntlet/oracle/module_oracle.h"
#include "oracle_internal.h"

namespace gauntlet {
namespace oracle_impl {

void fail(const std::string& why) { throw OracleFailure(why); }

std::string shape_str(const at::Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

void expect_count(const Inputs& in, size_t n) {
  if (in.size() != n)
    fail("expected " + std::to_string(n) + " input tensor(s), got " + std::to_string(in.size()));
}

static const at::Tensor& checked_tensor(const Inputs& in, size_t i, const char* name) {
  const at::Tensor& t = in.at(i);
  if (!t.defined()) fail(std::string(name) + ": tensor is undefined");
  if (t.layout() != at::kStrided) fail(std::string(name) + ": only strided (dense) tensors are supported");
  return t;
}

at::Tensor value_input(const Inputs& in, size_t i, const char* name) {
  const at::Tensor& t = checked_tensor(in, i, name);
  const at::ScalarType st = t.scalar_type();
  if (!at::isFloatingType(st) && !at::isIntegralType(st, /*includeBool=*/false))
    fail(std::string(name) + ": dtype " + c10::toString(st) + " is not a real number type");
  // Device first, then dtype: both conversions are exact, so the order only saves GPU memory.
  return t.to(at::kCPU).to(at::kDouble).contiguous();
}

at::Tensor index_input(const Inputs& in, size_t i, const char* name) {
  const at::Tensor& t = checked_tensor(in, i, name);
  const at::ScalarType st = t.scalar_type();
  if (!at::isIntegralType(st, /*includeBool=*/false))
    fail(std::string(name) + ": index tensor must have an integer dtype, got " + c10::toString(st));
  return t.to(at::kCPU).to(at::kLong).contiguous();
}

void expect_rank(const at::Tensor& t, const char* name, int64_t rank) {
  if (t.dim() != rank)
    fail(std::string(name) + ": expected rank " + std::to_string(rank) + ", got shape " + shape_str(t));
}

void expect_min_rank(const at::Tensor& t, const char* name, int64_t rank) {
  if (t.dim() < rank)
    fail(std::string(name) + ": expected rank >= " + std::to_string(rank) + ", got shape " +
         shape_str(t));
}

// Local on purpose: gauntlet::attr_to_string lives in another component.
static std::string describe(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return "int64 " + std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    std::ostringstream os;
    os << "double " << *d;
    return os.str();
  }
  return std::string("bool ") + (std::get<bool>(v) ? "true" : "false");
}

template <typename T>
static T get_attr(const AttrMap& attrs, const char* name, const char* type_name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) fail(std::string("missing attribute '") + name + "'");
  if (const T* p = std::get_if<T>(&it->second)) return *p;
  fail(std::string("attribute '") + name + "' must be " + type_name + ", got " + describe(it->second));
}

int64_t attr_int(const AttrMap& attrs, const char* name) {
  return get_attr<int64_t>(attrs, name, "int64");
}
double attr_double(const AttrMap& attrs, const char* name) {
  return get_attr<double>(attrs, name, "double");
}
bool attr_bool(const AttrMap& attrs, const char* name) { return get_attr<bool>(attrs, name, "bool"); }

int64_t wrap_dim(int64_t dim, int64_t rank) {
  const int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    fail("dim " + std::to_string(dim) + " is out of range for a rank-" + std::to_string(rank) +
         " tensor");
  return dim < 0 ? dim + r : dim;
}

OracleResult make_result(const at::Tensor& out, const at::Tensor& scale) {
  OracleResult r;
  r.outputs.push_back(out.contiguous());
  r.scales.push_back(scale.defined() ? scale.contiguous() : at::Tensor());
  return r;
}

}  // namespace oracle_impl

namespace {

const std::map<std::string, oracle_impl::OracleFn>& oracle_table() {
  namespace o = oracle_impl;
  static const std::map<std::string, o::OracleFn> table = {
      {"relu", o::relu},
      {"gelu", o::gelu},
      {"sigmoid", o::sigmoid},
      {"add", o::add},
      {"clamp", o::clamp},
      {"sum", o::sum},
      {"mean", o::mean},
      {"amax", o::amax},
      {"logsumexp", o::logsumexp},
      {"softmax", o::softmax},
      {"log_softmax", o::log_softmax},
      {"layer_norm", o::layer_norm},
      {"rms_norm", o::rms_norm},
      {"matmul", o::matmul},
      {"linear_relu", o::linear_relu},
      {"bmm", o::bmm},
      {"conv2d", o::conv2d},
      {"sdpa", o::sdpa},
      {"cumsum", o::cumsum},
      {"embedding", o::embedding},
      {"cross_entropy", o::cross_entropy},
      {"segment_sum", o::segment_sum},
      {"filter", o::filter},
      {"sort", o::sort},
      {"topk", o::topk},
      {"group_by_sum", o::group_by_sum},
      {"scatter_add", o::scatter_add},
      {"quantize_per_tensor", o::quantize_per_tensor},
      {"dequantize", o::dequantize},
      {"int8_matmul", o::int8_matmul},
      {"fp8_matmul", o::fp8_matmul},
      {"unique", o::unique},
      {"hash_join", o::hash_join},
  };
  return table;
}

// Oracles of ops that have no schema, control and library baseline yet (issue 20): run_oracle
// runs them, oracle_ids() does not list them, so no schema lints against them and the tests that
// hold every listed oracle to a control, a baseline and special-value agreement are not yet owed.
// An oracle moves to oracle_table() with its schema.
const std::map<std::string, oracle_impl::OracleFn>& pending_oracle_table() {
  namespace o = oracle_impl;
  static const std::map<std::string, o::OracleFn> table = {};
  return table;
}

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

using oracle_impl::HeavyOracleTurn;

int heavy_oracle_permits() { return HeavyOracleTurn::permits(); }
int heavy_oracle_threads() { return HeavyOracleTurn::threads(); }
void set_heavy_oracle_threads(int threads) { HeavyOracleTurn::set_threads(threads); }
int heavy_oracle_peak() { return HeavyOracleTurn::peak_seen(); }

bool is_heavy_oracle_call(const std::vector<at::Tensor>& inputs) {
  int64_t elements = 0;
  for (const at::Tensor& t : inputs)
    if (t.defined()) elements += t.numel();
  return elements >= kHeavyOracleElements;
}

OracleResult run_oracle(const std::string& oracle_id, const std::vector<at::Tensor>& inputs,
                        const AttrMap& attrs) {
  // A problem's own sizes make one float64 call seconds of every core (a 2048^3 matmul). Side by
  // side from an audit's lanes and a kernel's gates, each with ATen's full thread team, such calls
  // oversubscribed the CPU: on the H200's 16 cores, 8 lanes of 1_Square_matrix_multiplication_
  // took about 10 s a case. Heavy calls take turns in small teams (oracle_concurrency_bench);
  // light ones, and a module's reference child (its own process), run as they come.
  // HeavyOracleTurn lets as many in at once as their thread teams fit in the cores.
  std::optional<HeavyOracleTurn> turn;
  if (!is_module_oracle_id(oracle_id) && is_heavy_oracle_call(inputs)) turn.emplace();
  OracleResult failed;
  const auto& listed = oracle_table();
  const auto& table = listed.count(oracle_id) ? listed : pending_oracle_table();
  const auto it = table.find(oracle_id);
  const bool module = is_module_oracle_id(oracle_id);
  if (it == table.end() && !module) {
    failed.error = "unknown oracle id '" + oracle_id + "'";
    return failed;
  }
  try {
    // An unmapped Python module's reference Model, in its sandboxed child (module_oracle.h).
    if (module) return run_module_oracle(oracle_id, inputs);
    return it->second(inputs, attrs);
  } catch (const oracle_impl::OracleFailure& e) {
    failed.error = oracle_id + ": " + first_line(e.what());
  } catch (const c10::Error& e) {
    failed.error = oracle_id + ": " + first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    failed.error = oracle_id + ": " + first_line(e.what());
  } catch (...) {
    failed.error = oracle_id + ": unknown exception";
  }
  if (failed.error.size() == oracle_id.size() + 2) failed.error += "failed without a message";
  return failed;
}

std::vector<std::string> oracle_ids() {
  std::vector<std::string> ids;
  for (const auto& [id, fn] : oracle_table()) ids.push_back(id);
  return ids;
}

}  // namespace gauntlet
