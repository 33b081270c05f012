// runtime_test_util.h — the worker-count fixture shared by the runtime unit tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "chan_ops.h"  // white-box: src/runtime
#include "chanflow/runtime.h"
#include "scheduler_impl.h"  // white-box: src/runtime

namespace cf = chanflow;

// Runs each test on a fresh scheduler with GetParam() workers, installed as cf::go's default.
class WorkersFixture : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    sched_ = std::make_unique<cf::Scheduler>(cf::SchedulerOptions{.workers = GetParam()});
    use_ = std::make_unique<cf::ScopedDefaultScheduler>(*sched_);
  }
  void TearDown() override {
    use_.reset();
    sched_.reset();
  }
  cf::Scheduler& sched() { return *sched_; }

 private:
  std::unique_ptr<cf::Scheduler> sched_;
  std::unique_ptr<cf::ScopedDefaultScheduler> use_;
};

// White-box: parties parked on a channel right now.
inline std::size_t parked_in(cf::detail::ChanBase* c, bool senders) {
  using cf::detail::ChanAlgo;
  ChanAlgo::lock(c);
  std::size_t n = 0;
  for (auto* w = (senders ? ChanAlgo::sendq(c) : ChanAlgo::recvq(c)).front(); w != nullptr;
       w = w->next) {
    ++n;
  }
  ChanAlgo::unlock(c);
  return n;
}
inline std::size_t parked_receivers(cf::detail::ChanBase* c) { return parked_in(c, false); }
inline std::size_t parked_senders(cf::detail::ChanBase* c) { return parked_in(c, true); }
// White-box: every green thread of s is parked (or none is alive).
inline bool all_parked(const cf::Scheduler& s) { return s.impl()->active_count() == 0; }
// Waits (yielding, not sleeping) until `pred` holds: the state is produced by other threads.
template <class P>
void wait_until(P pred) {
  while (!pred()) cf::yield();
}

#define CHANFLOW_WORKER_COUNTS ::testing::Values(1, 2, 4, 8)
