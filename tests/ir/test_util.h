// Helpers shared by the ir tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "chanflow/ir.h"

namespace chanflow::ir_test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

// Runs fn, expects a ProgramError, returns it (fails the test otherwise).
template <class F>
ProgramError expect_program_error(F&& fn) {
  try {
    fn();
  } catch (const ProgramError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ProgramError, got another exception: " << e.what();
    return ProgramError("wrong exception");
  }
  ADD_FAILURE() << "expected ProgramError, nothing was thrown";
  return ProgramError("nothing thrown");
}

}  // namespace chanflow::ir_test
