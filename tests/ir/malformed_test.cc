// The malformed-program corpus (tests/ir/malformed, made by make_corpus.py): every file gives a
// ProgramError (or a clear cf::Error) from loading or verifying whose message contains the
// expected text — never a crash, a hang or an unexpected exception type.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "test_util.h"

namespace cf = chanflow;
namespace fs = std::filesystem;
using cf::ir_test::read_file;

namespace {

std::map<std::string, std::string> binary_expectations() {
  std::map<std::string, std::string> out;
  std::istringstream in(
      read_file(std::string(CHANFLOW_MALFORMED_DIR) + "/binary_expectations.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) {
      out[line.substr(0, line.find(':'))] = "";
    } else {
      out[line.substr(0, colon)] = line.substr(colon + 2);
    }
  }
  return out;
}

std::string text_expectation(const std::string& path) {
  const std::string data = read_file(path);
  const std::string prefix = "# expect: ";
  if (data.rfind(prefix, 0) != 0) return "<missing expectation line>";
  return data.substr(prefix.size(), data.find('\n') - prefix.size());
}

}  // namespace

TEST(MalformedCorpus, EveryFileIsRejectedWithItsMessage) {
  const auto binaries = binary_expectations();
  int text_files = 0;
  int binary_files = 0;
  for (const auto& entry : fs::directory_iterator(CHANFLOW_MALFORMED_DIR)) {
    const std::string path = entry.path().string();
    const std::string ext = entry.path().extension().string();
    if (ext != ".pbtxt" && ext != ".pb") continue;
    SCOPED_TRACE(path);
    std::string expected;
    if (ext == ".pbtxt") {
      expected = text_expectation(path);
      ++text_files;
    } else {
      auto it = binaries.find(entry.path().filename().string());
      ASSERT_NE(it, binaries.end()) << "no line in binary_expectations.txt";
      expected = it->second;
      ++binary_files;
    }
    try {
      cf::Program p = cf::Program::from_file(path);
      cf::verify(p);
      ADD_FAILURE() << "accepted";
    } catch (const cf::ProgramError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(expected), std::string::npos)
          << "message: " << msg << "\nexpected: " << expected;
      // Load errors start with the file name; verifier errors with the position.
      EXPECT_TRUE(msg.rfind(path, 0) == 0 || msg.rfind("block ", 0) == 0) << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a ProgramError: " << e.what();
    }
  }
  EXPECT_GE(text_files + binary_files, 30);
  EXPECT_GE(binary_files, 8);
}

TEST(MalformedCorpus, EveryPrefixOfAValidProgramIsHandled) {
  // Truncation at every byte of a valid binary and text program: an error or (for prefixes that
  // happen to be complete programs) a program — never a crash.
  const std::string text = read_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_go_op.pbtxt");
  const std::string bin = cf::Program::from_text(text).to_binary();
  int errors = 0;
  for (size_t n = 0; n < bin.size(); ++n) {
    try {
      cf::verify(cf::Program::from_binary(bin.substr(0, n)));
    } catch (const cf::ProgramError&) {
      ++errors;
    }
  }
  for (size_t n = 0; n < text.size(); n += 7) {
    try {
      cf::verify(cf::Program::from_text(text.substr(0, n)));
    } catch (const cf::ProgramError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}
