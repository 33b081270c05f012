#include "chanflow/core/error.h"

#include <sstream>

namespace chanflow {
namespace {

std::string describe(const std::vector<MachineError::Failure>& failures) {
  std::ostringstream out;
  out << "GoMachine: " << failures.size() << " node(s) failed";
  for (const auto& f : failures) {
    out << "\n  node " << f.node_id << " '" << f.node_name << "': " << f.message;
  }
  return out.str();
}

}  // namespace

MachineError::MachineError(std::vector<Failure> failures)
    : Error(describe(failures)), failures_(std::move(failures)) {}

}  // namespace chanflow
