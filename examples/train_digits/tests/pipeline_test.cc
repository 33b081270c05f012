// The training pipeline end to end (short): it learns, writes its outputs, its trace parses as a
// Chrome trace with every kind of track, a fixed seed reproduces a run bit for bit (with any
// number of workers), and a deadline stops it early with the last weights evaluated.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "digits.h"
#include "training/models.h"
#include "training/pipeline.h"
#include "training/report.h"

namespace td = train_digits;
namespace tr = training;

namespace {

const td::Digits& digits() {
  static const td::Digits d = td::load_digits(TRAIN_DIGITS_DATA, {.expected_rows = 1797});
  return d;
}

tr::TrainConfig short_config(int workers, uint64_t seed) {
  tr::TrainConfig c;
  c.workers = workers;
  c.epochs = 3;
  c.batch_size = 64;
  c.shards_per_step = 2;
  c.seed = seed;
  c.adam.lr = 1e-2;
  c.eval_program = TRAIN_DIGITS_PROGRAM;
  return c;
}

const tr::Mlp& mlp() {
  static const tr::Mlp m({.inputs = td::kPixels, .hidden = 64, .classes = td::kClasses});
  return m;
}

}  // namespace

TEST(TrainDigits, LearnsAndWritesMetricsAndAChromeTrace) {
  td::Split split = td::stratified_split(digits(), 0.2, 1);
  tr::TrainConfig c = short_config(2, 1);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("train_digits_out_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  c.trace_path = dir + "/trace.json";
  c.trace_steps = int64_t{1} << 40;  // the whole run: its evaluations too
  int ticks_or_epochs = 0;
  c.on_epoch_done = [&](const tr::ProgressSnapshot& s) {
    EXPECT_GE(s.test_accuracy, 0.0);
    ++ticks_or_epochs;
  };
  tr::TrainResult r = tr::train(mlp(), digits(), split, c);
  EXPECT_EQ(ticks_or_epochs, 3);
  ASSERT_EQ(r.epochs.size(), 3u);
  EXPECT_GE(r.test_accuracy, 0.85);
  EXPECT_EQ(r.test_rows, static_cast<int64_t>(split.test.size()));
  EXPECT_LT(r.epochs.back().train_loss, r.epochs.front().train_loss);
  EXPECT_EQ(r.samples, 3 * static_cast<int64_t>(split.train.size()));
  EXPECT_EQ(r.epochs.back().test_accuracy, r.test_accuracy);
  EXPECT_FALSE(r.deadline_reached);

  tr::OutputPaths out = tr::write_outputs(dir, mlp(), c, r);
  ASSERT_TRUE(std::filesystem::exists(out.metrics_csv));
  ASSERT_TRUE(std::filesystem::exists(out.metrics_json));
  std::ifstream csv(out.metrics_csv);
  int lines = 0;
  for (std::string l; std::getline(csv, l);) ++lines;
  EXPECT_EQ(lines, 4);  // header + 3 epochs
  std::ifstream mj(out.metrics_json);
  nlohmann::json m = nlohmann::json::parse(mj);
  EXPECT_EQ(m["test_accuracy"].get<double>(), r.test_accuracy);
  EXPECT_EQ(m["epochs"].get<int>(), 3);
  EXPECT_EQ(m["workers"].get<int>(), 2);
  EXPECT_EQ(m["samples_per_s"].get<double>(), r.samples_per_s);
  EXPECT_EQ(m["seconds"].get<double>(), r.train_seconds);
  EXPECT_GT(m["peak_rss_kib"].get<int64_t>(), 0);
  ASSERT_EQ(m["per_epoch"].size(), 3u);
  EXPECT_EQ(m["per_epoch"][2]["test_accuracy"].get<double>(), r.epochs[2].test_accuracy);

  std::ifstream tf(out.trace_json);
  nlohmann::json trace = nlohmann::json::parse(tf);  // throws if not JSON
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["otherData"]["complete"], true);
  std::map<int, std::string> processes;
  std::set<std::string> stage_names, cats;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
    if (e["ph"] == "X") {
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0.0) << e.dump();
    }
    if (e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e.contains("cat")) cats.insert(e["cat"].get<std::string>());
    if (e.value("cat", "") == "stage" && e["ph"] == "X") {
      stage_names.insert(e["name"].get<std::string>().substr(0, 8));
    }
  }
  std::set<std::string> names;
  for (const auto& [pid, name] : processes) names.insert(name);
  EXPECT_TRUE(names.count("training pipeline")) << "stage events";
  EXPECT_TRUE(names.count("runtime")) << "green threads";
  EXPECT_TRUE(names.count("executor")) << "eval.pbtxt ops";
  EXPECT_TRUE(names.count("gomachine")) << "node tracks";
  for (const char* cat : {"run", "wake", "node", "stage", "gthread"}) {
    EXPECT_TRUE(cats.count(cat)) << cat;
  }
  EXPECT_TRUE(stage_names.count("forward+")) << "worker steps";
  EXPECT_TRUE(stage_names.count("apply st")) << "optimiser steps";
  EXPECT_TRUE(stage_names.count("evaluate")) << "evaluations";
  EXPECT_TRUE(stage_names.count("batch 0")) << "loader batches";
  std::filesystem::remove_all(dir);
}

TEST(TrainDigits, FixedSeedReproducesBitForBit) {
  td::Split split = td::stratified_split(digits(), 0.2, 7);
  for (int64_t delay : {0, 1}) {
    uint64_t hash_1_worker = 0;
    for (int workers : {1, 2}) {
      tr::TrainConfig c = short_config(workers, 7);
      c.epochs = 2;
      c.delay = delay;
      tr::TrainResult a = tr::train(mlp(), digits(), split, c);
      tr::TrainResult b = tr::train(mlp(), digits(), split, c);
      const std::string what =
          std::to_string(workers) + " worker(s), delay " + std::to_string(delay);
      EXPECT_EQ(a.weights_hash, b.weights_hash) << what;
      EXPECT_EQ(a.test_accuracy, b.test_accuracy) << what;
      ASSERT_EQ(a.epochs.size(), b.epochs.size());
      for (size_t i = 0; i < a.epochs.size(); ++i) {
        EXPECT_EQ(a.epochs[i].train_loss, b.epochs[i].train_loss) << what << ", epoch " << i + 1;
        EXPECT_EQ(a.epochs[i].test_accuracy, b.epochs[i].test_accuracy) << what;
      }
      // Gradients are summed in shard order whoever computed them, and each step uses a fixed
      // weights version: the worker count changes nothing.
      if (workers == 1) hash_1_worker = a.weights_hash;
      EXPECT_EQ(a.weights_hash, hash_1_worker) << what;
    }
  }
  // Another seed is another run (the hash does depend on the seed).
  tr::TrainResult c = tr::train(mlp(), digits(), split, short_config(1, 8));
  tr::TrainResult d = tr::train(mlp(), digits(), split, short_config(1, 7));
  EXPECT_NE(c.weights_hash, d.weights_hash);
}

TEST(TrainDigits, DeadlineStopsTrainingAndEvaluatesTheLastWeights) {
  td::Split split = td::stratified_split(digits(), 0.2, 1);
  tr::TrainConfig c = short_config(2, 1);
  c.epochs = 100000;  // far more than the deadline allows
  c.deadline = std::chrono::milliseconds(300);
  tr::TrainResult r = tr::train(mlp(), digits(), split, c);
  EXPECT_TRUE(r.deadline_reached);
  EXPECT_LT(r.epochs.size(), 100000u);
  EXPECT_GT(r.steps, 0);
  EXPECT_EQ(r.test_rows, static_cast<int64_t>(split.test.size()));
  EXPECT_LT(r.train_seconds, 30.0);
}

TEST(TrainDigits, BadConfigurationAndProgramAreErrors) {
  td::Split split = td::stratified_split(digits(), 0.2, 1);
  tr::TrainConfig c = short_config(2, 1);
  c.shards_per_step = 0;
  EXPECT_THROW(tr::train(mlp(), digits(), split, c), chanflow::Error);
  c = short_config(0, 1);  // no workers
  EXPECT_THROW(tr::train(mlp(), digits(), split, c), chanflow::Error);
  c = short_config(1, 1);
  c.eval_program = "/nonexistent/eval.pbtxt";
  EXPECT_THROW(tr::train(mlp(), digits(), split, c), chanflow::Error);
}
