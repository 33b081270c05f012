// progress.h — the progress display: one line redrawn in place on a terminal, plain lines
// (at most one per `plain_every`, and one per epoch) when stdout is a file or a pipe.
//
//   ProgressBar bar(std::cout, ProgressBar::stdout_is_tty());
//   bar.update(snapshot);          // from the coordinator's ticker
//   bar.epoch_done(snapshot);      // keeps the epoch's line (terminal) or prints it (plain)
//   bar.finish();
//
// Thread-safety: one thread (the coordinator) drives a bar. Never blocks beyond the stream write.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace training {

struct ProgressSnapshot {
  int epoch = 0;  // 1-based epoch in progress (or just finished)
  int epochs = 0;
  int64_t step_in_epoch = 0;  // optimiser steps done in this epoch
  int64_t steps_per_epoch = 0;
  double loss = 0;            // mean training loss over this epoch so far
  double train_accuracy = 0;  // over this epoch so far
  double test_accuracy = -1;  // last evaluation; < 0 before the first
  double samples_per_s = 0;   // training throughput since the start
  double elapsed_s = 0;
};

// The line's text, without a newline (also used by tests and plain mode).
std::string format_progress(const ProgressSnapshot& s, int bar_width = 24);

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, bool tty,
              std::chrono::milliseconds plain_every = std::chrono::milliseconds(2000))
      : out_(out), tty_(tty), plain_every_(plain_every) {}
  static bool stdout_is_tty();

  void update(const ProgressSnapshot& s);
  void epoch_done(const ProgressSnapshot& s);
  // Ends the in-place line (terminal). Idempotent.
  void finish();

 private:
  std::ostream& out_;
  bool tty_;
  std::chrono::milliseconds plain_every_;
  std::chrono::steady_clock::time_point last_plain_{};
  bool dirty_ = false;
};

}  // namespace training
