// The scheduler's worker limit (kMaxWorkers) and its environment variables: a value that does not
// parse or is out of range is an Error naming the variable and the value, never ignored.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "chanflow/core/error.h"
#include "chanflow/runtime/scheduler.h"
#include "support/scoped_env.h"

namespace cf = chanflow;

namespace {

using chanflow::testing_support::ScopedEnv;

// The Error message Scheduler(options) throws; "" when it constructs.
std::string construction_error(cf::SchedulerOptions options = {}) {
  try {
    cf::Scheduler s(options);
  } catch (const cf::Error& e) {
    return e.what();
  }
  return "";
}

TEST(SchedulerLimits, MoreThanKMaxWorkersIsALimitErrorBeforeAnyThreadStarts) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    cf::Scheduler s({.workers = 20000});
    FAIL() << "expected a LimitError";
  } catch (const cf::LimitError& e) {
    EXPECT_EQ(e.limit(), "workers");
    EXPECT_EQ(std::string(e.what()),
              "scheduler: 20000 workers requested, more than the limit of 1024 (kMaxWorkers)");
  }
  // Refused before anything was built: 20,000 workers took about a minute to start.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(construction_error({.workers = cf::kMaxWorkers + 1}).find("1025 workers"), 11u);
  EXPECT_NE(construction_error({.workers = -1}).find("-1 workers requested"), std::string::npos);
  static_assert(cf::kMaxWorkers == 1024);
}

TEST(SchedulerEnvironment, MalformedWorkersIsAnError) {
  for (const char* bad : {"abc", "4x", "-2", "+4", " 4", "2000", "99999999999999999999"}) {
    ScopedEnv env("CHANFLOW_WORKERS", bad);
    const std::string err = construction_error();
    EXPECT_NE(err.find(std::string("CHANFLOW_WORKERS='") + bad + "'"), std::string::npos)
        << "value '" << bad << "': " << err;
  }
  ScopedEnv env("CHANFLOW_WORKERS", "3");
  cf::Scheduler s;
  EXPECT_EQ(s.workers(), 3);
  // An explicit count does not read the variable.
  ScopedEnv bad("CHANFLOW_WORKERS", "abc");
  EXPECT_EQ(construction_error({.workers = 1}), "");
}

TEST(SchedulerEnvironment, MalformedStackSizeIsAnError) {
  for (const char* bad : {"abc", "12q", "0", "64kk", "2048m"}) {
    ScopedEnv env("CHANFLOW_STACK_SIZE", bad);
    const std::string err = construction_error({.workers = 1});
    EXPECT_NE(err.find(std::string("CHANFLOW_STACK_SIZE='") + bad + "'"), std::string::npos)
        << "value '" << bad << "': " << err;
  }
  ScopedEnv env("CHANFLOW_STACK_SIZE", "512k");
  cf::Scheduler s({.workers = 1});
  EXPECT_GE(s.stack_size(), 512u * 1024);
  EXPECT_LT(s.stack_size(), 520u * 1024);
}

TEST(SchedulerEnvironment, MalformedPinWorkersIsAnError) {
  for (const char* bad : {"yes", "2", "-1"}) {
    ScopedEnv env("CHANFLOW_PIN_WORKERS", bad);
    const std::string err = construction_error({.workers = 1});
    EXPECT_NE(err.find(std::string("CHANFLOW_PIN_WORKERS='") + bad + "'"), std::string::npos)
        << "value '" << bad << "': " << err;
  }
  ScopedEnv env("CHANFLOW_PIN_WORKERS", "0");
  EXPECT_EQ(construction_error({.workers = 1}), "");
}

}  // namespace
