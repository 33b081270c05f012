// go_test_util.h — shared scaffolding for the ported conformance suites (Go, Paddle) and the
// runtime stress tests.
//
// Every conformance case runs on a fresh scheduler per worker count, like marl's parametrised
// fixtures:
//
//   class GoChan : public cf::testing::WorkersTest {};
//   TEST_P(GoChan, Fifo) { auto c = cf::make_chan<int>(10); ... }
//   CHANFLOW_INSTANTIATE_WORKERS(GoChan);        // workers = 1, 2, 4
//
// Sizes follow Go's own tests. Sanitizer builds set CHANFLOW_TEST_SHORT=1 (the CMakeLists does it),
// which selects the sizes Go uses under `go test -short`; release and debug runs use the full
// sizes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "chanflow/runtime.h"

namespace chanflow::testing {

// True when CHANFLOW_TEST_SHORT is set to a non-empty value other than "0".
inline bool short_mode() {
  const char* v = std::getenv("CHANFLOW_TEST_SHORT");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// True when CHANFLOW_STRESS_LONG is set to a non-empty value other than "0".
inline bool stress_long() {
  const char* v = std::getenv("CHANFLOW_STRESS_LONG");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// Go's `testing.Short()` sizing: full is Go's default, small is Go's -short value.
inline int go_size(int full, int small) { return short_mode() ? small : full; }

// A fixture that installs a fresh scheduler with GetParam() workers as the default scheduler for
// the test's lifetime. The scheduler's destructor waits for every green thread the test started,
// so a test that leaks a blocked green thread hangs (and CTest's timeout names it).
class WorkersTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    scheduler_ = std::make_unique<Scheduler>(SchedulerOptions{.workers = GetParam()});
    use_ = std::make_unique<ScopedDefaultScheduler>(*scheduler_);
  }
  void TearDown() override {
    use_.reset();
    scheduler_.reset();
  }
  int workers() const { return GetParam(); }

 private:
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ScopedDefaultScheduler> use_;
};

inline std::string workers_name(const ::testing::TestParamInfo<int>& info) {
  return "w" + std::to_string(info.param);
}

// Gives green threads a chance to run, for checks that something has *not* happened (Go's
// `time.Sleep(time.Millisecond)` before checking that a receive on an empty channel blocked).
// Never used to order events a test's correctness depends on.
inline void give_others_a_chance(std::chrono::microseconds d = std::chrono::milliseconds(1)) {
  after(d).recv();
}

// Closes `ch`, ignoring the ChannelClosedError of a second close (teardown of pipelines whose
// stages close each other's channels).
template <class T>
void close_quietly(Chan<T> ch) {
  try {
    ch.close();
  } catch (const ChannelClosedError&) {
  }
}

// Runs `fn` as the "main goroutine" of a ported Go program: in a green thread named "main", while
// the calling OS thread waits (so a deadlock inside the program surfaces as DeadlockError here).
// An exception from `fn` is rethrown in the caller.
inline void run_go_main(std::function<void()> fn) {
  Group g;
  g.go(std::move(fn));
  g.wait();
}

}  // namespace chanflow::testing

#define CHANFLOW_INSTANTIATE_WORKERS(Suite)                            \
  INSTANTIATE_TEST_SUITE_P(Workers, Suite, ::testing::Values(1, 2, 4), \
                           ::chanflow::testing::workers_name)
