// gauntlet-worker: the process that loads one kernel inside the sandbox (or the zygote that forks them).
#include <cstdio>
#include <cstring>
#include <string>

#include "gauntlet/sandbox/sandbox_policy.h"
#include "worker.h"

int main(int argc, char** argv) {
  using namespace gauntlet;
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--zygote") return worker::zygote_main();
  if (mode == "--serve" && argc > 3 && std::strcmp(argv[2], "--policy") == 0) {
    SandboxPolicy policy;
    if (!decode_policy(argv[3], &policy)) {
      std::fprintf(stderr, "gauntlet-worker: malformed --policy\n");
      return 2;
    }
    return worker::run_child(policy);
  }
  std::fprintf(stderr,
               "gauntlet-worker is started by gauntlet, not by hand.\n"
               "usage: gauntlet-worker --zygote | --serve --policy HEX\n");
  return 2;
}
