// Installs the handler that prints a backtrace when gauntlet itself faults.
#pragma once

namespace gauntlet {
void install_crash_report();
}
