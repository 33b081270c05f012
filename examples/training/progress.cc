// progress.cc — formatting (fmt) and in-place redraw with "\r" + erase-line.
#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace training {

std::string format_progress(const ProgressSnapshot& s, int bar_width) {
  const double frac =
      s.epochs > 0 && s.steps_per_epoch > 0
          ? (static_cast<double>(s.epoch - 1) +
             static_cast<double>(s.step_in_epoch) / static_cast<double>(s.steps_per_epoch)) /
                static_cast<double>(s.epochs)
          : 0.0;
  const int filled = std::clamp(static_cast<int>(frac * bar_width + 0.5), 0, bar_width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(bar_width - filled), '.');
  const std::string test =
      s.test_accuracy < 0 ? std::string("  -   ") : fmt::format("{:5.1f}%", 100 * s.test_accuracy);
  return fmt::format(
      "epoch {:>{}}/{} [{}] loss {:.4f}  train {:5.1f}%  test {}  {:>7.0f} samples/s  {:5.1f} s",
      s.epoch, fmt::formatted_size("{}", s.epochs), s.epochs, bar, s.loss, 100 * s.train_accuracy,
      test, s.samples_per_s, s.elapsed_s);
}

bool ProgressBar::stdout_is_tty() { return isatty(fileno(stdout)) != 0; }

void ProgressBar::update(const ProgressSnapshot& s) {
  if (tty_) {
    out_ << "\r\033[K" << format_progress(s) << std::flush;
    dirty_ = true;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - last_plain_ < plain_every_) return;
  last_plain_ = now;
  out_ << format_progress(s) << "\n" << std::flush;
}

void ProgressBar::epoch_done(const ProgressSnapshot& s) {
  if (tty_) {
    // On a terminal the epoch's line is redrawn in place like the ticks: one line, updated.
    out_ << "\r\033[K" << format_progress(s) << std::flush;
    dirty_ = true;
    return;
  }
  last_plain_ = std::chrono::steady_clock::now();
  out_ << format_progress(s) << "\n" << std::flush;
}

void ProgressBar::finish() {
  if (tty_ && dirty_) out_ << "\n" << std::flush;
  dirty_ = false;
}

}  // namespace training
