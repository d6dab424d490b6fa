// Gates whose checks are not in this version yet: they report skip with the reason, never pass.
#include "gauntlet/gate.h"

namespace gauntlet {
namespace {

class PendingGate : public Gate {
 public:
  explicit PendingGate(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  GateVerdict run(GateContext&) override {
    GateVerdict v;
    v.name = name_;
    v.status = Status::Skip;
    v.message = "skip: not implemented in this version of gauntlet";
    return v;
  }

 private:
  std::string name_;
};

}  // namespace

std::unique_ptr<Gate> make_pending_gate(const std::string& name) { return std::make_unique<PendingGate>(name); }

}  // namespace gauntlet
