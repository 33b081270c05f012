// stage_trace.cc — the pipeline's lanes in the runtime's trace.
#include "stage_trace.h"

namespace training {

chanflow::trace::Track StageTrace::track_of(const std::string& track) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tracks_.find(track);
  if (it == tracks_.end()) it = tracks_.emplace(track, chanflow::trace::thread(pid_, track)).first;
  return it->second;
}

}  // namespace training
