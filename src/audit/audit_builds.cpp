// The audit's build-ahead lane: Python modules' build steps run --build-jobs at a time, ahead of the lanes that verify them.
#include "audit_builds.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "gauntlet/common/interrupt.h"
#include "gauntlet/build/module_build.h"

namespace gauntlet {

pid_t start_build_ahead(const std::vector<KernelManifest>& modules, const SandboxOptions& sandbox, int build_jobs) {
  if (modules.empty() || build_jobs < 1) return 0;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid < 0 ? 0 : pid;  // no build-ahead lane: each lane builds its own kernels
  prctl(PR_SET_PDEATHSIG, SIGKILL);        // never outlives the audit
  install_interrupt_exit("");              // SIGTERM from the audit: kill the build children, exit
  // The lanes take each module's build lock before they verify it: a module this lane is
  // building makes its verifier wait, then find the build; one not reached yet the verifier
  // builds itself, and this lane then finds it built. No build runs twice either way.
  Launcher launcher(sandbox);
  launcher.set_python_module(true);
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min<int>(build_jobs, int(modules.size())); ++t)
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < modules.size();) (void)build_python_module(modules[i], launcher);
    });
  for (std::thread& t : threads) t.join();
  _exit(0);
}

}  // namespace gauntlet
