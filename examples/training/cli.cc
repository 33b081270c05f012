// cli.cc — the shared options (CLI11) and the run with its progress and summary (fmt).
#include "cli.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "chanflow/core/error.h"
#include "chanflow/tensor/tensor_obj.h"
#include "progress.h"
#include "report.h"

namespace training {

void add_common_options(CLI::App& app, TrainConfig& cfg, CommonOptions& o) {
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
  app.add_option("--seed", cfg.seed, "seed of the initial weights and the shuffles")
      ->capture_default_str();
  app.add_option("--deadline", o.deadline_s,
                 "stop training after this many seconds and evaluate the weights it reached "
                 "(0: no deadline)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out-dir", o.out_dir, "where metrics.csv, metrics.json and trace.json go")
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
  app.add_option("--lr", cfg.adam.lr, "Adam learning rate")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--trace", o.trace_file,
                 "stream the run's trace (green threads, why they wait and who woke them, "
                 "channels, ops, GoMachine nodes, the stages) to this file (default: "
                 "OUT_DIR/trace.json)");
  app.add_option("--trace-steps", cfg.trace_steps,
                 "trace this many optimiser steps, then stop the trace")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-trace", o.no_trace, "do not record or write a trace");
  app.add_flag("--pin,!--no-pin", cfg.pin_workers,
               "bind worker i's OS thread to the i-th CPU (--no-pin: let the OS place them; "
               "pinning helps on an idle machine and hurts on one shared with other work)")
      ->capture_default_str();
  app.add_flag("--quiet", o.quiet, "no progress lines (the summary is still printed)");
  app.add_option("--min-accuracy", o.min_accuracy,
                 "exit with status 3 when the final test accuracy is below this (0..1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
}

int run_and_report(const std::string& program, const Model& model, const Dataset& data,
                   const Split& split, TrainConfig& cfg, const CommonOptions& o) {
  try {
    cfg.deadline = std::chrono::milliseconds(static_cast<int64_t>(o.deadline_s * 1000));
    if (!o.no_trace) {
      cfg.trace_path = o.trace_file.empty()
                           ? (std::filesystem::path(o.out_dir) / "trace.json").string()
                           : o.trace_file;
      const std::filesystem::path dir = std::filesystem::path(cfg.trace_path).parent_path();
      std::error_code ec;
      if (!dir.empty()) std::filesystem::create_directories(dir, ec);
      if (ec) {
        CHANFLOW_THROW(chanflow::Error)
            << "cannot create the trace's directory '" << dir.string() << "': " << ec.message();
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::cout << fmt::format(
        "{}: {} ({} train / {} test), {}, {} worker(s), batch {} in {} shards, gradient delay "
        "{}, Adam lr {}, {} epochs, seed {}\n",
        program, chanflow::shape_to_string(data.sample_shape), split.train.size(),
        split.test.size(), model.describe(), cfg.workers, cfg.batch_size, cfg.shards_per_step,
        cfg.delay, cfg.adam.lr, cfg.epochs, cfg.seed);
    ProgressBar bar(std::cout, ProgressBar::stdout_is_tty());
    if (!o.quiet) {
      cfg.on_tick = [&](const ProgressSnapshot& s) { bar.update(s); };
      cfg.on_epoch_done = [&](const ProgressSnapshot& s) { bar.epoch_done(s); };
    }
    TrainResult r = train(model, data, split, cfg);
    bar.finish();
    OutputPaths out = write_outputs(o.out_dir, model, cfg, r);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << fmt::format(
        "test accuracy {:.2f}% ({} of {} held-out images){}\n", 100 * r.test_accuracy,
        static_cast<int64_t>(r.test_accuracy * static_cast<double>(r.test_rows) + 0.5), r.test_rows,
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
    if (r.test_accuracy < o.min_accuracy) {
      std::cerr << fmt::format("{}: test accuracy {:.4f} is below --min-accuracy {:.4f}\n", program,
                               r.test_accuracy, o.min_accuracy);
      return 3;
    }
  } catch (const chanflow::Error& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace training
