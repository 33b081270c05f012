// train_fashion end to end on the real Fashion-MNIST files (Debian's dataset-fashion-mnist;
// skipped when it is not installed): a short MLP run learns, a seed gives the same weights bit
// for bit with 1, 2 and 4 workers (MLP and CNN), a deadline stops a CNN run cleanly with its last
// weights evaluated, and mismatched inputs are errors.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "chanflow/core/error.h"
#include "fashion.h"
#include "idx.h"
#include "training/models.h"
#include "training/pipeline.h"

namespace tf = train_fashion;
namespace tr = training;

namespace {

bool have_data() { return std::filesystem::exists(std::string(tf::kFashionMnistDir)); }

#define REQUIRE_DATA()                            \
  if (!have_data())                               \
  GTEST_SKIP() << tf::kFashionMnistDir            \
               << " is missing (apt-get install " \
                  "dataset-fashion-mnist)"

const tr::Mlp& mlp() {
  static const tr::Mlp m({.inputs = 784, .hidden = 256, .classes = 10});
  return m;
}
const tr::LeNet& lenet() {
  static const tr::LeNet m({});
  return m;
}

tr::TrainConfig config(int workers, const std::string& program) {
  tr::TrainConfig c;
  c.workers = workers;
  c.epochs = 1;
  c.batch_size = 128;
  c.seed = 3;
  c.adam.lr = 1e-3;
  c.eval_program = std::string(TRAINING_PROGRAM_DIR) + "/" + program;
  c.pin_workers = false;
  c.delay = 0;  // train_fashion's defaults: synchronous steps of two shards
  c.shards_per_step = 2;
  return c;
}

}  // namespace

TEST(TrainFashion, OneMlpEpochLearns) {
  REQUIRE_DATA();
  const tf::FashionData f = tf::load_fashion(tf::kFashionMnistDir, mlp().sample_shape());
  ASSERT_EQ(f.split.train.size(), 60000u);
  ASSERT_EQ(f.split.test.size(), 10000u);
  const tr::TrainResult r = tr::train(mlp(), f.data, f.split, config(2, "mlp_eval.pbtxt"));
  EXPECT_EQ(r.test_rows, 10000);
  EXPECT_EQ(r.samples, 60000);
  EXPECT_GE(r.test_accuracy, 0.80);  // about 0.84 after one epoch; chance is 0.10
  ASSERT_EQ(r.epochs.size(), 1u);
  EXPECT_LT(r.epochs[0].train_loss, 0.7);
}

TEST(TrainFashion, ASeedGivesTheSameWeightsWithAnyWorkerCount) {
  REQUIRE_DATA();
  struct Case {
    const tr::Model* model;
    const char* program;
    int64_t rows;
  };
  for (const Case& c :
       {Case{&mlp(), "mlp_eval.pbtxt", 6000}, Case{&lenet(), "lenet_eval.pbtxt", 1024}}) {
    tf::FashionData f = tf::load_fashion(tf::kFashionMnistDir, c.model->sample_shape(), c.rows);
    f.split.test.resize(1000);  // the weights are what is compared; a tenth of the test set will do
    uint64_t first = 0;
    for (int workers : {1, 2, 4}) {
      const tr::TrainResult r = tr::train(*c.model, f.data, f.split, config(workers, c.program));
      if (workers == 1) {
        first = r.weights_hash;
        EXPECT_GT(r.test_accuracy, 0.3) << c.model->describe();
      } else {
        EXPECT_EQ(r.weights_hash, first) << c.model->describe() << ", " << workers << " workers";
      }
    }
    tr::TrainConfig other = config(2, c.program);
    other.seed = 4;
    EXPECT_NE(tr::train(*c.model, f.data, f.split, other).weights_hash, first)
        << c.model->describe();
  }
}

TEST(TrainFashion, ADeadlineStopsACnnRunWithItsLastWeightsEvaluated) {
  REQUIRE_DATA();
  tf::FashionData f = tf::load_fashion(tf::kFashionMnistDir, lenet().sample_shape());
  f.split.test.resize(2000);  // the evaluation after the deadline, kept short for the sanitizers
  tr::TrainConfig c = config(2, "lenet_eval.pbtxt");
  c.epochs = 20;
  c.deadline = std::chrono::milliseconds(1500);
  const auto t0 = std::chrono::steady_clock::now();
  const tr::TrainResult r = tr::train(lenet(), f.data, f.split, c);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.deadline_reached);
  EXPECT_LT(r.epochs.size(), 20u);
  EXPECT_GT(r.steps, 0);
  EXPECT_GE(r.train_seconds, 1.5);
  // Stopping takes at most the steps in flight (milliseconds each), then one evaluation.
  EXPECT_LT(r.train_seconds, 1.5 + 5.0);
  EXPECT_GT(r.final_train_loss, 0.0);  // the loss of the epoch the deadline cut short
  EXPECT_EQ(r.test_rows, 2000);
  EXPECT_GT(r.test_accuracy, 0.3);
  EXPECT_LT(wall, 60.0);
}

TEST(TrainFashion, MismatchedShapesAndRowsAreErrors) {
  REQUIRE_DATA();
  EXPECT_THROW(tf::load_fashion(tf::kFashionMnistDir, {28, 29}), chanflow::ShapeError);
  EXPECT_THROW(tf::load_fashion(tf::kFashionMnistDir, {784}, 60001), chanflow::Error);
  const tf::FashionData f = tf::load_fashion(tf::kFashionMnistDir, {784}, 256);
  // The CNN takes (1, 28, 28) samples, not rows of 784.
  EXPECT_THROW(tr::train(lenet(), f.data, f.split, config(1, "lenet_eval.pbtxt")),
               chanflow::ShapeError);
  EXPECT_THROW(tf::load_fashion("/nonexistent/fashion", {784}), tf::IdxError);
}
