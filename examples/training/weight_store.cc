// weight_store.cc — versions in a map, one ready channel each.
#include "weight_store.h"

#include <mutex>
#include <optional>

#include "chanflow/core/error.h"
#include "chanflow/runtime/select.h"

namespace cf = chanflow;

namespace training {

WeightStore::WeightStore(ParamsPtr initial, int64_t keep) : latest_(initial->version), keep_(keep) {
  Entry& e = entry(latest_);
  e.params = std::move(initial);
  e.ready.close();
}

WeightStore::Entry& WeightStore::entry(int64_t version) {
  auto it = versions_.find(version);
  if (it == versions_.end()) {
    it = versions_.emplace(version, Entry{nullptr, cf::make_chan<cf::Unit>(0)}).first;
  }
  return it->second;
}

void WeightStore::publish(ParamsPtr p) {
  std::lock_guard<cf::Mutex> lock(mu_);
  if (p->version != latest_ + 1) {
    CHANFLOW_THROW(cf::Error) << "WeightStore: publishing version " << p->version << " after "
                              << latest_;
  }
  latest_ = p->version;
  Entry& e = entry(latest_);
  e.params = std::move(p);
  e.ready.close();  // wakes every waiter
  while (!versions_.empty() && versions_.begin()->first <= latest_ - keep_) {
    versions_.erase(versions_.begin());
  }
}

ParamsPtr WeightStore::wait(int64_t version, const cf::Context& ctx) {
  cf::Chan<cf::Unit> ready;
  {
    std::lock_guard<cf::Mutex> lock(mu_);
    if (version <= latest_ - keep_) {
      CHANFLOW_THROW(cf::Error) << "WeightStore: version " << version << " was forgotten (latest "
                                << latest_ << ", keeping " << keep_ << ")";
    }
    ready = entry(version).ready;
  }
  bool canceled = false;
  cf::select(cf::on_recv(ready, [](auto) {}),
             cf::on_recv(ctx.done(), [&](auto) { canceled = true; }));
  if (canceled) return nullptr;
  std::lock_guard<cf::Mutex> lock(mu_);
  ParamsPtr p = entry(version).params;
  CHANFLOW_CHECK(p != nullptr) << "WeightStore: version " << version << " woke without weights";
  return p;
}

}  // namespace training
