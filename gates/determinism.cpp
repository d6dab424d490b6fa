// Gate determinism (SPEC "The twelve gates"): placeholder until its checks land; reports skip with the reason.
#include "gauntlet/gate.h"

namespace gauntlet {

std::unique_ptr<Gate> make_pending_gate(const std::string& name);
std::unique_ptr<Gate> make_determinism_gate() { return make_pending_gate("determinism"); }

}  // namespace gauntlet
