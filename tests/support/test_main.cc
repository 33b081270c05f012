// The main of every chanflow GoogleTest binary. Adds a listener that fails a test which leaves
// more live objects behind than it found (builds with CHANFLOW_OBJECT_TRACKING only).
#include <gtest/gtest.h>

#include <cstdio>

#include "chanflow/core/object.h"

namespace {

class LiveObjectListener : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo& /*info*/) override {
    before_ = chanflow::live_object_count();
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    const int64_t after = chanflow::live_object_count();
    if (before_ >= 0 && after != before_) {
      ADD_FAILURE() << "leak check: " << info.test_suite_name() << "." << info.name() << " left "
                    << (after - before_) << " live object(s) behind";
    }
  }

 private:
  int64_t before_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new LiveObjectListener());
  return RUN_ALL_TESTS();
}
