// gauntlet's command line: verify, kbcheck, schemas list|show|lint (see README and SPEC "Command line").
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>

#include <cstdio>
#include <fstream>
#include <random>

#include "gauntlet/common/atomic_file.h"
#include "gauntlet/cases/contract_check.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/sandbox/device_nodes.h"
#include "gauntlet/report/junit.h"
#include "gauntlet/audit/audit.h"
#include "gauntlet/run/standard_check.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/kernelbench/kernelbench.h"
#include "crash_report.h"
#include "kernel_flags.h"
#include "gauntlet/oracle/oracle.h"
#include "gauntlet/run/replay.h"
#include "gauntlet/report/report_command.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/run/selftest.h"
#include "gauntlet/run/verify.h"
#include "gauntlet/version.h"

namespace {

using namespace gauntlet;

// --seed: a decimal number from 0 to 2^64-1, nothing else (CLI11 alone wraps -5 to 2^64-5 and
// clamps what is too large).
const CLI::Validator kSeedValidator(
    [](std::string& text) -> std::string {
      uint64_t v = 0;
      const char* end = text.data() + text.size();
      const auto [ptr, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec != std::errc() || ptr != end)
        return "'" + text + "' is not a seed: a whole number from 0 to 18446744073709551615";
      return "";
    },
    "SEED");

// --gates '' would otherwise mean every gate: an empty subset is a mistake, not "all".
const CLI::Validator kSomeGate(
    [](std::string& text) -> std::string {
      if (text.find_first_not_of(" ,") == std::string::npos)
        return "'" + text + "' names no gate: give at least one (e.g. contract,accuracy), or leave --gates out for all";
      return "";
    },
    "GATES");

int fail_usage(const std::string& msg) {
  std::fprintf(stderr, "gauntlet: error: %s\n", msg.c_str());
  return 2;
}

int run_verify(const VerifyFlags& f) {
  std::string error;
  auto manifest = manifest_from_flags(f, &error);
  if (!manifest) return fail_usage(error);
  SandboxOptions sopts = sandbox_from(f, &error);
  if (!error.empty()) return fail_usage(error);
  if (std::string why = replay_dir_problem(f.replay_dir); !why.empty()) return fail_usage(why);
  // A CUDA kernel on a machine without CUDA cannot be verified here: said so, as selftest says it,
  // not a build error of the kernel's (exit 2: nothing was verified).
  if (std::string why = why_not_runnable_here(*manifest); !why.empty())
    return fail_usage((manifest->manifest_path.empty() ? manifest->source : manifest->manifest_path) + ": " + why +
                      "; nothing was verified");
  VerifyOptions opts;
  opts.seed = f.seed_given ? f.seed : std::random_device{}() * 0x100000001ull + std::random_device{}();
  opts.budget = f.budget;
  opts.gates = split_commas(f.gates);
  opts.replay_dir = f.replay_dir;
  opts.progress = !f.quiet;
  opts.jobs = gate_jobs(f.jobs);
  opts.gpu_jobs = f.gpu_jobs;
  // verify keeps nothing between runs, so an interrupted one is simply run again (README).
  install_interrupt_exit("\ngauntlet: interrupted by %s: gate processes killed, no report written; run the same command again to verify\n");
  Launcher launcher(sopts);
  auto report = verify_kernel(*manifest, opts, launcher, &error);
  if (!report) return fail_usage(error);
  print_report(*report, stdout);
  if (!f.json_path.empty()) {
    // Written beside and renamed: an interrupt during the write never leaves half a file.
    if (!write_file_atomic(f.json_path, report_to_json(*report).dump(2) + "\n"))
      return fail_usage("cannot write " + f.json_path);
  }
  if (!f.junit_path.empty() && !write_junit_file(report_to_json(*report), f.junit_path, &error)) return fail_usage(error);
  return exit_code_for(*report, f.allow_unsafe);
}

int run_kbcheck(const VerifyFlags& f) {
  std::string error;
  auto manifest = manifest_from_flags(f, &error);
  if (!manifest) return fail_usage(error);
  SandboxOptions sopts = sandbox_from(f, &error);
  if (!error.empty()) return fail_usage(error);
  Launcher launcher(sopts);
  // The check an audit stores beside gauntlet's verdict (standard_check.h): KernelBench's own for a
  // Python module, the U[0,1) kbcheck for a manifest. One that cannot run is bad input (exit 2).
  const StandardCheck c = run_standard_check(*manifest, launcher);
  if (c.verdict == "error") return fail_usage(c.reason);
  std::printf("kbcheck: %s: %s (%s)\n", c.verdict.c_str(), c.reason.c_str(),
              c.check == "kernelbench" ? "KernelBench's check" : "U[0,1) inputs at one shape");
  return c.verdict == "accept" ? 0 : 1;
}

// A kernel.json given to `schemas lint`: an object with "op" and no "schema_version".
bool is_kernel_manifest_file(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() && j.contains("op") && !j.contains("schema_version");
}

// Lints a kernel manifest as the contract it declares: its fields, then against its op's schema
// (the checks verify makes before anything runs).
void lint_manifest_file(const std::string& path, std::vector<SchemaIssue>* issues) {
  std::string error;
  auto m = load_manifest(path, &error);
  if (!m) return issues->push_back({path, "/", error});
  if (m->op == kModuleOp) return;  // its schema is its own Model's: known only once it runs
  auto schema = find_schema(m->op, &error);
  if (!schema) return issues->push_back({path, "/op", error});
  for (const ContractIssue& i : check_contract(*schema, &*m)) issues->push_back({path, "/" + i.field, i.message});
}


int run_schemas(const std::string& action, const std::vector<std::string>& args) {
  std::vector<SchemaIssue> issues;
  if (action == "list") {
    auto schemas = load_schema_dir(default_schema_dir(), &issues);
    for (const OpSchema& s : schemas) std::printf("%-14s %s\n", s.name.c_str(), s.semantics.c_str());
    for (const SchemaIssue& i : issues) std::fprintf(stderr, "%s: %s: %s\n", i.file.c_str(), i.field.c_str(), i.message.c_str());
    return issues.empty() ? 0 : 1;
  }
  if (action == "show") {
    if (args.empty()) return fail_usage("schemas show OP");
    const std::string path = default_schema_dir() + "/" + args[0] + ".json";
    std::ifstream in(path);
    if (!in) return fail_usage("unknown op '" + args[0] + "'");
    std::printf("%s", std::string(std::istreambuf_iterator<char>(in), {}).c_str());
    return 0;
  }
  if (action == "lint") {
    std::vector<OpSchema> schemas;
    size_t manifests = 0;
    if (args.empty()) {
      schemas = load_schema_dir(default_schema_dir(), &issues);
    } else {
      for (const std::string& p : args) {
        // A missing file is bad input; a folder is linted as the folder of schemas it is.
        struct stat st {};
        if (stat(p.c_str(), &st) != 0) return fail_usage("schemas lint: cannot read " + p + ": no such file or folder");
        if (S_ISDIR(st.st_mode)) {
          for (OpSchema& s : load_schema_dir(p, &issues)) schemas.push_back(std::move(s));
        } else if (is_kernel_manifest_file(p)) {
          lint_manifest_file(p, &issues);
          ++manifests;
        } else if (auto s = load_schema_file(p, &issues)) {
          schemas.push_back(*s);
        }
      }
    }
    for (const OpSchema& s : schemas)
      for (const SchemaIssue& i : lint_schema(s, oracle_ids())) issues.push_back(i);
    for (const SchemaIssue& i : issues) std::printf("%s: %s: %s\n", i.file.c_str(), i.field.c_str(), i.message.c_str());
    if (manifests) std::printf("%zu schemas, %zu kernel manifests, %zu issues\n", schemas.size(), manifests, issues.size());
    else std::printf("%zu schemas, %zu issues\n", schemas.size(), issues.size());
    return issues.empty() ? 0 : 1;
  }
  return fail_usage("schemas takes list, show OP or lint [FILE...]");
}

// gauntlet audit: flags into AuditOptions (shard from --shard, else Slurm / Kubernetes variables).
struct AuditFlags {
  VerifyFlags v;
  std::string shard, gpus;
  int shard_count = 0;
};

int run_audit_command(AuditOptions ao, const AuditFlags& f) {
  std::string error;
  ao.sandbox = sandbox_from(f.v, &error);
  if (!error.empty()) return fail_usage(error);
  if (std::string why = replay_dir_problem(ao.verify.replay_dir); !why.empty()) return fail_usage(why);
  ao.jobs = gate_jobs(f.v.jobs);
  ao.verify.gates = split_commas(f.v.gates);
  for (const std::string& g : ao.verify.gates)
    if (!make_gate(g)) return fail_usage("--gates: unknown gate '" + g + "'");
  for (const std::string& g : split_commas(f.gpus)) {
    if (g.empty() || g.size() > 4 || g.find_first_not_of("0123456789") != std::string::npos)
      return fail_usage("--gpus: '" + f.gpus + "' is not a list of GPU indices like 0,1,2");
    ao.gpus.push_back(std::stoi(g));
  }
  auto shard = f.shard.empty() ? shard_from_environment(f.shard_count, &error) : parse_shard(f.shard, &error);
  if (!shard) return fail_usage(error);
  ao.shard = *shard;
  return run_audit(ao, stdout);
}

int run_merge(const std::vector<std::string>& inputs, const std::string& output) {
  std::string error;
  if (!merge_databases(inputs, output, &error)) return fail_usage(error);
  const nlohmann::json records = read_kernel_reports(output, &error);
  if (!error.empty()) return fail_usage(error);
  size_t done = 0;
  for (const nlohmann::json& r : records) done += r.value("complete", false);
  std::printf("merged %zu databases into %s: %zu kernels (%zu complete)\n", inputs.size(), output.c_str(), records.size(), done);
  return 0;
}

constexpr const char* kGpuTurnBoundHelp =
    "seconds a CUDA child's request keeps the GPU to itself; past it the GPU is shared with the next child, so a "
    "slow or spinning kernel cannot stall the others (default 1; 0: no bound)";
constexpr const char* kBuildTimeoutHelp =
    "seconds a Python module's import and build may take (load_inline, Triton; default 600): past it, timeout";
constexpr const char* kOracleThreadsHelp =
    "threads of an unmapped module's float64 reference child (default: the CPUs, shared among the kernels in flight)";

// Every subcommand's flags, and the subcommand CLI11 parsed (one of them).
struct Commands {
  VerifyFlags vf;  // verify
  VerifyFlags kf;  // kbcheck
  SelftestOptions st;
  VerifyFlags sf;  // selftest
  AuditOptions ao;
  AuditFlags af;
  std::vector<std::string> merge_inputs;
  std::string merge_output;
  ReportOptions rpo;
  ReplayOptions ro;
  VerifyFlags rf;  // replay
  std::string schema_action;
  std::vector<std::string> schema_args;
  CLI::App *verify = nullptr, *kbcheck = nullptr, *selftest = nullptr, *audit = nullptr, *merge = nullptr,
           *report = nullptr, *replay = nullptr, *schemas = nullptr;
  Commands() { ao.verify.seed = 1; }  // fixed, so that a rerun (and every shard) continues the same audit
};

// verify: one kernel through the gates
void add_verify_command(CLI::App& app, Commands& c) {
  CLI::App* verify = c.verify = app.add_subcommand("verify", "run the gates on one kernel");
  add_kernel_flags(verify, c.vf);
  verify->add_option("--seed", c.vf.seed, "master seed (default: random, printed)")->check(kSeedValidator)->each([&](const std::string&) { c.vf.seed_given = true; });
  verify->add_option("--json", c.vf.json_path, "write the per-kernel JSON report here");
  verify->add_option("--junit", c.vf.junit_path, "write JUnit XML here: a test case per gate, failures with the replay command");
  verify->add_option("--budget", c.vf.budget, "case-budget multiplier for deeper runs (default 1)")->check(CLI::Range(1, 1000));
  verify->add_option("--gates", c.vf.gates, "comma-separated subset of gates to run")->check(kSomeGate);
  verify->add_option("--replay-dir", c.vf.replay_dir, "where failing cases are written (default gauntlet-out/replays)");
  verify->add_flag("--quiet", c.vf.quiet, "no progress lines on stderr");
  verify->add_flag("--allow-unsafe", c.vf.allow_unsafe,
                   "exit 0 for an unsafe kernel (right inside its declared contract, wrong or crashing outside it)");
  verify->add_option("--oracle-threads", c.vf.oracle_threads, kOracleThreadsHelp)->check(CLI::Range(1, 1024));
  verify->add_option("--build-timeout", c.vf.build_timeout, kBuildTimeoutHelp)->check(CLI::Range(1, 86400));
  verify->add_option("--jobs,-j", c.vf.jobs, "gate processes at once (default: one per CPU, at most 12; timing always runs alone)")
      ->check(CLI::Range(1, 256));
  verify->add_option("--gpu-jobs", c.vf.gpu_jobs, "gate processes in flight for a CUDA kernel: they start side by side and take turns executing on the GPU (default 4)")
      ->check(CLI::Range(1, 64));
  verify->add_option("--gpu-turn-bound", c.vf.gpu_turn_bound, kGpuTurnBoundHelp)->check(CLI::Range(0.0, 86400.0));
}

// kbcheck: the field's standard check alone
void add_kbcheck_command(CLI::App& app, Commands& c) {
  CLI::App* kb = c.kbcheck = app.add_subcommand("kbcheck", "the field's standard check, for comparison: KernelBench's own for a Python module (5 trials of get_inputs()), else 5 U[0,1) trials at one shape; allclose 1e-2");
  add_kernel_flags(kb, c.kf);
}

// selftest: the bundled corpus against its declared verdicts
void add_selftest_command(CLI::App& app, Commands& c) {
  CLI::App* selftest = c.selftest = app.add_subcommand("selftest", "run the corpus' planted bugs and controls and check each verdict");
  selftest->add_option("--corpus", c.st.corpus_dir, "corpus directory (default: the bundled corpus)");
  selftest->add_option("--filter", c.st.filter, "only kernels whose manifest path contains this");
  selftest->add_option("--seed", c.st.seed, "master seed (default 1)")->check(kSeedValidator);
  selftest->add_option("--json", c.st.json_path, "write every kernel's report as a JSON array");
  selftest->add_flag("--no-kbcheck", [&](int64_t) { c.st.kbcheck = false; }, "skip the KernelBench-style comparison");
  selftest->add_option("--timeout", c.sf.timeout, "wall-clock seconds per case sent to a gate process (default 60)");
  selftest->add_option("--memory-limit", c.sf.memory, "host memory per gate process (default 4G)");
  selftest->add_flag("--no-zygote", c.sf.no_zygote, "fork+exec a fresh worker per gate");
  selftest->add_option("--jobs,-j", c.sf.jobs, "gate processes at once (default: one per CPU, at most 12)")->check(CLI::Range(1, 256));
  selftest->add_option("--gpu-jobs", c.sf.gpu_jobs, "gate processes in flight for a CUDA kernel, taking turns on the GPU (default 4)")->check(CLI::Range(1, 64));
  selftest->add_option("--gpu-turn-bound", c.sf.gpu_turn_bound, kGpuTurnBoundHelp)->check(CLI::Range(0.0, 86400.0));
}

// audit: a corpus into the results database
void add_audit_command(CLI::App& app, Commands& c) {
  CLI::App* audit = c.audit = app.add_subcommand("audit", "verify a corpus into a resumable SQLite database (parallel, shardable)");
  audit->add_option("PATH", c.ao.path, "a folder of kernel.json manifests and KernelBench modules, a manifest, a .py or a .jsonl")->required();
  audit->add_option("--db", c.ao.db_path, "results database; rerun with the same one to continue (default gauntlet-audit.db)");
  audit->add_option("--json", c.ao.json_path, "write a JSON array, one record per kernel in the verify --json format");
  audit->add_option("--jobs,-j", c.af.v.jobs, "CPU gate processes at once, across kernels (default: one per CPU)")->check(CLI::Range(1, 256));
  audit->add_option("--gpus", c.af.gpus, "GPU indices for CUDA kernels (default 0 when present)");
  audit->add_option("--gpu-jobs", c.ao.gpu_lanes, "CUDA kernels in flight per GPU, each a lane of its own; their children execute on the GPU one at a time (default 4)")
      ->check(CLI::Range(1, 64));
  audit->add_option("--gpu-gate-jobs", c.ao.gpu_gate_jobs, "gate processes in flight for each CUDA kernel of a lane, as verify --gpu-jobs (default 4: with --gpu-jobs 4, 16 children start side by side per GPU)")
      ->check(CLI::Range(1, 64));
  audit->add_option("--gpu-turn-bound", c.af.v.gpu_turn_bound, kGpuTurnBoundHelp)->check(CLI::Range(0.0, 86400.0));
  audit->add_option("--build-jobs", c.ao.build_jobs, "Python modules built at once, ahead of the lanes that verify them (default: one per CPU)")
      ->check(CLI::Range(1, 256));
  audit->add_option("--shard", c.af.shard, "i/n: audit only the i-th of n parts, split by kernel hash (default from Slurm/Kubernetes)");
  audit->add_option("--shard-count", c.af.shard_count, "shards of a Kubernetes indexed job (JOB_COMPLETION_INDEX gives the index)")
      ->check(CLI::Range(1, 1000000));
  audit->add_option("--seed", c.ao.verify.seed, "master seed (default 1; part of the stored results' key)")->check(kSeedValidator);
  audit->add_option("--budget", c.ao.verify.budget, "case-budget multiplier (default 1)")->check(CLI::Range(1, 1000));
  audit->add_option("--gates", c.af.v.gates, "comma-separated subset of gates to run")->check(kSomeGate);
  audit->add_option("--replay-dir", c.ao.verify.replay_dir, "where failing cases are written (default gauntlet-out/replays)");
  audit->add_option("--work-dir", c.ao.work_dir, "where the modules of JSONL inputs are written (default gauntlet-out/audit-work)");
  audit->add_option("--timeout", c.af.v.timeout, "wall-clock seconds per case sent to a gate process (default 60)");
  audit->add_option("--memory-limit", c.af.v.memory, "host memory per gate process (default 4G)");
  audit->add_flag("--no-zygote", c.af.v.no_zygote, "fork+exec a fresh worker per gate");
  audit->add_option("--oracle-threads", c.af.v.oracle_threads, kOracleThreadsHelp)->check(CLI::Range(1, 1024));
  audit->add_option("--build-timeout", c.af.v.build_timeout, kBuildTimeoutHelp)->check(CLI::Range(1, 86400));
  audit->add_option("--progress-every", c.ao.progress_seconds, "seconds between progress lines when stderr is not a terminal (default 10)")
      ->check(CLI::Range(1, 86400));
  audit->add_flag("--standard-check,!--no-standard-check", c.ao.standard_check,
                  "also run the field's standard check (KernelBench's for modules, kbcheck for manifests) and "
                  "store its verdict beside gauntlet's (default on)");
}

// merge: audit databases into one
void add_merge_command(CLI::App& app, Commands& c) {
  CLI::App* merge = c.merge = app.add_subcommand("merge", "merge audit databases (a sharded audit's) into one");
  merge->add_option("DB", c.merge_inputs, "results databases to merge")->required();
  merge->add_option("-o,--output", c.merge_output, "the merged database (created, or added to)")->required();
}

// report: an audit's results as HTML, JUnit or JSON
void add_report_command(CLI::App& app, Commands& c) {
  CLI::App* report = c.report = app.add_subcommand("report", "an audit's results as one self-contained HTML page (plots, per-kernel table), JUnit XML or JSON");
  report->add_option("DB", c.rpo.input, "results database (gauntlet audit), or a verify/selftest --json file")->required();
  report->add_option("-o,--output", c.rpo.html_path, "the HTML page (default report.html, unless only --junit/--json are given)");
  report->add_option("--junit", c.rpo.junit_path, "write JUnit XML: a testsuite per kernel, a testcase per gate");
  report->add_option("--json", c.rpo.json_path, "write the records as a JSON array in the verify --json format ('-': stdout)");
  report->add_option("--title", c.rpo.title, "the page's title (default 'gauntlet report')");
}

// replay: one stored case again
void add_replay_command(CLI::App& app, Commands& c) {
  CLI::App* replay = c.replay = app.add_subcommand("replay", "re-run a stored failing case: same verdict, same output bytes");
  replay->add_option("file", c.ro.file, "replay file written by a failing gate")->required();
  replay->add_option("--dump", c.ro.dump_dir, "write inputs, expected and actual values to this directory");
  replay->add_option("--emit", c.ro.emit_dir,
                     "write a standalone reproducer here: the case's input bytes, the float64 reference and a PyTorch "
                     "script that runs the kernel and prints the first mismatch (needs no gauntlet)");
  replay->add_option("--timeout", c.rf.timeout, "wall-clock seconds per case sent to the gate process (default 60)");
  replay->add_option("--memory-limit", c.rf.memory, "host memory for the gate process (default 4G)");
  replay->add_option("--oracle-threads", c.rf.oracle_threads, kOracleThreadsHelp)->check(CLI::Range(1, 1024));
  replay->add_option("--build-timeout", c.rf.build_timeout, kBuildTimeoutHelp)->check(CLI::Range(1, 86400));
}

// schemas: list, show, lint
void add_schemas_command(CLI::App& app, Commands& c) {
  CLI::App* schemas = c.schemas = app.add_subcommand("schemas", "list, show or lint the op schemas");
  schemas->add_option("action", c.schema_action, "list | show OP | lint [FILE...]")->required();
  schemas->add_option("args", c.schema_args, "op name or schema files");
}

// Runs the parsed subcommand; a harness exception is one line and exit 2.
int run_command(Commands& c) {
  try {
    if (c.verify->parsed()) return run_verify(c.vf);
    if (c.kbcheck->parsed()) return run_kbcheck(c.kf);
    if (c.selftest->parsed()) {
      std::string error;
      SandboxOptions sopts = sandbox_from(c.sf, &error);
      if (!error.empty()) return fail_usage(error);
      Launcher launcher(sopts);
      c.st.verify.jobs = gate_jobs(c.sf.jobs);
      c.st.verify.gpu_jobs = c.sf.gpu_jobs;
      return run_selftest(c.st, launcher, stdout);
    }
    if (c.audit->parsed()) return run_audit_command(c.ao, c.af);
    if (c.merge->parsed()) return run_merge(c.merge_inputs, c.merge_output);
    if (c.report->parsed()) return run_report(c.rpo, stdout);
    if (c.replay->parsed()) {
      std::string error;
      SandboxOptions sopts = sandbox_from(c.rf, &error);
      if (!error.empty()) return fail_usage(error);
      if (!c.ro.dump_dir.empty())
        if (std::string why = replay_dir_problem(c.ro.dump_dir, "--dump"); !why.empty()) return fail_usage(why);
      Launcher launcher(sopts);
      return run_replay(c.ro, launcher, stdout);
    }
    if (c.schemas->parsed()) return run_schemas(c.schema_action, c.schema_args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gauntlet: harness error: %s\n", e.what());
    return 2;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  install_crash_report();
  CLI::App app{"gauntlet: adversarial correctness verifier and fuzzer for GPU kernels"};
  app.set_version_flag("--version", std::string("gauntlet ") + GAUNTLET_VERSION_STRING);
  app.require_subcommand(1);
  Commands c;
  add_verify_command(app, c);
  add_kbcheck_command(app, c);
  add_selftest_command(app, c);
  add_audit_command(app, c);
  add_merge_command(app, c);
  add_report_command(app, c);
  add_replay_command(app, c);
  add_schemas_command(app, c);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail_usage(e.what());
  }
  // Commands other than verify and audit (those say more): children killed, one line, 128 + signal.
  if (!c.verify->parsed() && !c.audit->parsed())
    install_interrupt_exit("\ngauntlet: interrupted by %s: child processes killed\n");
  return run_command(c);
}
