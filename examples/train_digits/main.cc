// train_digits — the flagship: data-parallel training of an MLP on the UCI handwritten digits
// with green threads, channels and select (pipeline.h), a GoMachine per worker for forward and
// backward, and an evaluation program (eval.pbtxt) run by the executor.
//
//   build/release/examples/train_digits --workers 2 --epochs 40 --out-dir out/train_digits
//   scripts/plot_training.py out/train_digits/metrics.csv     # -> training.png
//
// Exit status: 0 on success; 1 on an error (one line on stderr naming it); 3 when the final test
// accuracy is below --min-accuracy.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "chanflow/core/error.h"
#include "dataset.h"
#include "pipeline.h"
#include "progress.h"
#include "report.h"

namespace td = train_digits;

int main(int argc, char** argv) {
  CLI::App app{
      "Train an MLP on the UCI digits with chanflow (green threads, channels, select, "
      "GoMachine gradients, an executor-run evaluation program)",
      "train_digits"};
  td::TrainConfig cfg;
  cfg.eval_program = TRAIN_DIGITS_PROGRAM;
  std::string data = TRAIN_DIGITS_DATA;
  std::string out_dir = "out/train_digits";
  double deadline_s = 100;
  double test_fraction = 0.2;
  double min_accuracy = 0;
  bool no_trace = false;
  std::string trace_file;
  int64_t expected_rows = 1797;
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--workers", cfg.workers, "worker green threads (= scheduler OS threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--epochs", cfg.epochs, "passes over the training split")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--batch-size", cfg.batch_size, "rows per optimiser step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--seed", cfg.seed, "seed of the split, the initial weights and the shuffles")
      ->capture_default_str();
  app.add_option("--deadline", deadline_s,
                 "stop training after this many seconds and evaluate (0: no deadline)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out-dir", out_dir, "where metrics.csv, metrics.json and trace.json go")
      ->capture_default_str();
  app.add_option("--shards", cfg.shards_per_step,
                 "GoMachine runs per optimiser step (each a slice of the batch, taken by any "
                 "worker; the result does not depend on --workers)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--delay", cfg.delay,
                 "gradient delay in steps: step s is computed with weights version s - delay "
                 "(0: synchronous; 1 lets workers compute the next step while the coordinator "
                 "applies this one)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{64}));
  app.add_option("--hidden", cfg.model.hidden, "hidden units")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--lr", cfg.adam.lr, "Adam learning rate")->capture_default_str();
  app.add_option("--data", data, "the digits CSV (gzip or plain)")->capture_default_str();
  app.add_option("--expected-rows", expected_rows, "images the data file must hold (-1: any)")
      ->capture_default_str();
  app.add_option("--test-fraction", test_fraction, "held-out share of each class")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 0.99));
  app.add_option("--program", cfg.eval_program, "the evaluation program (.pbtxt)")
      ->capture_default_str();
  app.add_option("--trace", trace_file,
                 "stream the run's trace (green threads, why they wait and who woke them, "
                 "channels, ops, GoMachine nodes, the stages) to this file (default: "
                 "OUT_DIR/trace.json)");
  app.add_option("--trace-steps", cfg.trace_steps,
                 "trace this many optimiser steps, then stop the trace")
      ->capture_default_str();
  app.add_flag("--no-trace", no_trace, "do not record or write a trace");
  bool no_pin = false;
  app.add_flag("--no-pin", no_pin,
               "let the OS place the scheduler's worker threads (default: one CPU each)");
  app.add_option("--min-accuracy", min_accuracy,
                 "exit with status 3 when the final test accuracy is below this (0..1)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  cfg.deadline = std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000));
  if (!no_trace) {
    cfg.trace_path =
        trace_file.empty() ? (std::filesystem::path(out_dir) / "trace.json").string() : trace_file;
    const std::filesystem::path dir = std::filesystem::path(cfg.trace_path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir);
  }
  cfg.pin_workers = !no_pin;

  try {
    const auto t0 = std::chrono::steady_clock::now();
    td::Digits digits = td::load_digits(data, {.expected_rows = expected_rows});
    td::Split split = td::stratified_split(digits, test_fraction, cfg.seed);
    std::cout << fmt::format(
        "train_digits: {} images ({} train / {} test), MLP 64-{}-10, {} worker(s), batch {} in {} "
        "shards, gradient delay {}, {} epochs, seed {}\n",
        digits.rows, split.train.size(), split.test.size(), cfg.model.hidden, cfg.workers,
        cfg.batch_size, cfg.shards_per_step, cfg.delay, cfg.epochs, cfg.seed);
    td::ProgressBar bar(std::cout, td::ProgressBar::stdout_is_tty());
    cfg.on_tick = [&](const td::ProgressSnapshot& s) { bar.update(s); };
    cfg.on_epoch_done = [&](const td::ProgressSnapshot& s) { bar.epoch_done(s); };
    td::TrainResult r = td::train(digits, split, cfg);
    bar.finish();
    td::OutputPaths out = td::write_outputs(out_dir, cfg, r);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << fmt::format(
        "test accuracy {:.2f}% ({} of {} held-out images){}\n", 100 * r.test_accuracy,
        static_cast<int64_t>(r.test_accuracy * r.test_rows + 0.5), r.test_rows,
        r.deadline_reached ? "  [deadline reached: training stopped early]" : "");
    std::cout << fmt::format(
        "final train loss {:.4f}; {} steps, {} samples in {:.2f} s = {:.0f} samples/s with {} "
        "worker(s); wall time {:.2f} s\n",
        r.final_train_loss, r.steps, r.samples, r.train_seconds, r.samples_per_s, cfg.workers,
        wall);
    std::cout << "metrics: " << out.metrics_csv << "  " << out.metrics_json << "\n";
    if (!out.trace_json.empty()) {
      std::cout << "trace:   " << out.trace_json << "  (open in https://ui.perfetto.dev)\n";
    }
    if (r.test_accuracy < min_accuracy) {
      std::cerr << fmt::format(
          "train_digits: test accuracy {:.4f} is below --min-accuracy {:.4f}\n", r.test_accuracy,
          min_accuracy);
      return 3;
    }
  } catch (const chanflow::Error& e) {
    std::cerr << "train_digits: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
