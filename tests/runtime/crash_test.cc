// An exception escaping a green thread ends the process with the green thread's name and error.
#include <stdexcept>

#include "runtime_test_util.h"

namespace {

TEST(GreenThreadDeathTest, UncaughtExceptionNamesTheGreenThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        cf::Scheduler s({.workers = 2});
        auto ch = cf::make_chan<int>();
        s.go("thrower", [] { throw std::runtime_error("boom in thrower"); });
        ch.recv();
      },
      "green thread 'thrower' terminated by an uncaught exception: boom in thrower");
}

TEST(GreenThreadDeathTest, NonStdExceptionToo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        cf::Scheduler s({.workers = 1});
        s.go("odd", [] { throw 42; });
        cf::make_chan<int>().recv();
      },
      "green thread 'odd' terminated by an uncaught exception: a non-std::exception object");
}

}  // namespace
