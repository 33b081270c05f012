// scoped_env.h — sets an environment variable for a scope (tests of settings read from the
// environment: scheduler limits, the trace's clock and spool).
#pragma once

#include <cstdlib>
#include <string>

namespace chanflow::testing_support {

// Sets `name` to `value` for the scope, then restores what was there (or unsets it). Not
// thread-safe (setenv is not): construct it before the code under test starts threads that read
// the environment.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
      had_ = true;
    }
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace chanflow::testing_support
