// captured_variables: outer reads/writes of a block subtree, including select cases.
#include <gtest/gtest.h>

#include "paddle_programs.h"
#include "test_util.h"

namespace cf = chanflow;

TEST(CapturedVariables, SeedGoBlock) {
  cf::Program p = cf::Program::from_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_go_op.pbtxt");
  cf::BlockCaptures c = cf::captured_variables(p, 1);
  EXPECT_EQ(c.reads, std::vector<std::string>{"channel"});
  EXPECT_TRUE(c.writes.empty());
  EXPECT_EQ(c.uses, std::vector<std::string>{"channel"});
}

TEST(CapturedVariables, NestedBlocksAndSelectCases) {
  cf::Program p = cf::testing_programs::fibonacci();
  // Block 1 is the go block (it receives on ch and sends on quit); its while is nested.
  cf::BlockCaptures go = cf::captured_variables(p, 1);
  EXPECT_EQ(go.reads, (std::vector<std::string>{"ch", "quit"}));
  EXPECT_TRUE(go.writes.empty());
  // The main while (block 3) reads ch, x, y, quit ... and writes x, y, run, result.
  cf::BlockCaptures loop = cf::captured_variables(p, 3);
  for (const char* v : {"ch", "quit", "x", "y"}) {
    EXPECT_NE(std::find(loop.reads.begin(), loop.reads.end(), v), loop.reads.end()) << v;
  }
  for (const char* v : {"x", "y", "run", "result"}) {
    EXPECT_NE(std::find(loop.writes.begin(), loop.writes.end(), v), loop.writes.end()) << v;
  }
  EXPECT_TRUE(cf::captured_variables(p, 0).uses.empty());
  EXPECT_THROW(cf::captured_variables(p, 99), cf::ProgramError);
}
