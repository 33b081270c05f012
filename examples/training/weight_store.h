// weight_store.h — the published versions of the weights, and waiting for one: Go's "broadcast
// by closing a channel" idiom. Every version has a ready channel, closed when the coordinator
// publishes that version; any number of workers wait on it (in a select with their context).
//
//   WeightStore store(v0, /*keep=*/3);
//   store.publish(v1);                               // coordinator: version 1 is out
//   ParamsPtr p = store.wait(1, ctx);                // worker: blocks until version 1 exists
//
// Thread-safety: every member is thread-safe (a cf::Mutex guards the map; waiting parks the
// green thread on the version's channel, outside the lock).
#pragma once

#include <cstdint>
#include <map>

#include "chanflow/runtime/chan.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/mutex.h"
#include "model.h"

namespace training {

class WeightStore {
 public:
  // Starts with `initial` (its version) published; keeps the `keep` newest versions.
  WeightStore(ParamsPtr initial, int64_t keep);

  // Publishes p (its version must be the next one: chanflow::Error otherwise), wakes its waiters
  // and forgets versions older than the `keep` newest. Never blocks for long.
  void publish(ParamsPtr p);

  // The weights of `version`, blocking until it is published; nullptr when ctx is done first.
  // Throws chanflow::Error for a version already forgotten.
  ParamsPtr wait(int64_t version, const chanflow::Context& ctx);

 private:
  struct Entry {
    ParamsPtr params;                      // null until published
    chanflow::Chan<chanflow::Unit> ready;  // closed when published
  };
  Entry& entry(int64_t version);  // under mu_

  chanflow::Mutex mu_;
  std::map<int64_t, Entry> versions_;
  int64_t latest_ = 0;
  int64_t keep_;
};

}  // namespace training
