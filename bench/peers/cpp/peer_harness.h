// A tiny harness shared by the hand-timed C++ peer programs (Boost.Fiber, oneTBB flow graph).
// Each shape runs once unmeasured (warm-up), then `reps` times; the program prints one line per
// shape, "RESULT <key> <unit> <v1> <v2> ...", which scripts/bench.py parses. Shapes check their own
// results and exit(1) on a wrong answer, so a broken peer cannot report a fast number.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace peer {

using Clock = std::chrono::steady_clock;

inline double ns_since(Clock::time_point t) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t).count();
}

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "peer check failed: %s\n", what);
  std::exit(1);
}

struct Options {
  int reps = 5;
  double scale = 1.0;
  std::string only;
};

// Parses --reps N, --scale X, --only REGEX; any other argument is returned in `rest`.
inline Options parse(int argc, char** argv, std::vector<std::string>* rest = nullptr) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      o.reps = std::atoi(argv[++i]);
    } else if (a == "--scale" && i + 1 < argc) {
      o.scale = std::atof(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      o.only = argv[++i];
    } else if (rest != nullptr) {
      rest->push_back(a);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.reps < 1) o.reps = 1;
  return o;
}

inline int scaled(const Options& o, int n) {
  int m = static_cast<int>(n * o.scale);
  return m < 1 ? 1 : m;
}

// Runs `fn` (which returns one measurement) warm-up + o.reps times and prints the RESULT line.
inline void run(const Options& o, const std::string& key, const char* unit,
                const std::function<double()>& fn) {
  if (!o.only.empty() && !std::regex_search(key, std::regex(o.only))) return;
  fn();
  std::printf("RESULT %s %s", key.c_str(), unit);
  for (int i = 0; i < o.reps; ++i) std::printf(" %.6g", fn());
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace peer
