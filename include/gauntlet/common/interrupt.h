// SIGINT/SIGTERM: the processes gauntlet started, killed from a signal handler; the exit that follows.
#pragma once
#include <sys/types.h>

#include <string>

namespace gauntlet {

// Every process a Launcher or the builder starts is registered here until it is reaped, so that
// an interrupt can kill it (its process group too) from a signal handler: lock-free, fixed size.
void register_child(pid_t pid);
void unregister_child(pid_t pid);
// Async-signal-safe: SIGKILL to every registered pid and its process group.
void kill_registered_children();

// True once an interrupt handler has started (set before any child is killed, so a thread that
// sees a child die of that kill also sees this and must not report it as the kernel's doing).
bool interrupt_requested();
// For a thread that would otherwise report or store something after an interrupt: never returns
// (the handler's _exit follows at once).
[[noreturn]] void wait_for_interrupt_exit();

// verify, and an audit lane: on SIGINT, SIGTERM or SIGHUP, kill the registered children, write `line`
// (if not empty) to stderr and _exit(128 + signal). `line` may contain "%s", replaced by the
// signal's name. Any earlier mask on these two signals is lifted.
void install_interrupt_exit(const std::string& line);

// "SIGINT", "SIGTERM" or "SIGHUP" (async-signal-safe: a literal).
const char* signal_name(int sig);
// The exit status of a run stopped by `sig`: 128 + sig (130 for SIGINT, 143 for SIGTERM).
inline int interrupted_exit_status(int sig) { return 128 + sig; }

}  // namespace gauntlet
