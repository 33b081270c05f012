// Hostile program shapes (tests/support/hostile_programs.h) through the loader, the verifier and
// the executor's preparation, as `chanflow check` runs them:
//
// * Blocks nested 40,000 deep (conditional_block / while / go, names resolved many scopes up):
//   loading, preparing and printing back must finish in bounded time — 20 s of this thread's CPU
//   time (not wall time, which a busy machine stretches), about 4x what it takes; a resolution
//   that walks the parent chain per name (quadratic) or a subtree per go block takes minutes —
//   and must not overflow the stack (nothing recurses per level).
// * A program of ~100 MB of text (CHANFLOW_SCALE_MEMORY_TEST, a binary of its own so that no
//   earlier test's freed memory hides the growth): the peak resident memory that loading and
//   preparing add must stay within 4x the file's size (sanitizer builds skip the bound: their
//   allocator pads and quarantines every block). 3.5x: the loader parses one op at a time
//   (1.8x the text at its peak, the objects 1.55x), preparation adds the rest. Parsed whole,
//   the message alone took 3x and the peak was 4.4x.
#include <gtest/gtest.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "chanflow/exec.h"
#include "chanflow/ir/program.h"
#include "support/hostile_programs.h"

namespace cf = chanflow;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

#ifndef CHANFLOW_SCALE_MEMORY_TEST
// CPU time this thread has used, in seconds.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST(ProgramScale, FortyThousandNestedBlocksCheckInBoundedTime) {
  constexpr int64_t kDepth = 40'000;
  std::ostringstream os;
  cf::testing_support::write_deep_program(os, kDepth);
  const std::string text = os.str();

  const double start = thread_cpu_seconds();
  cf::Program p = cf::Program::from_text(text, "deep.pbtxt");
  ASSERT_EQ(p.num_blocks(), static_cast<size_t>(kDepth) + 1);
  cf::Executor ex;
  ex.prepare(p);  // verifies and prepares: names, go arguments, closures
  const double check_s = thread_cpu_seconds() - start;
  const std::string back = p.to_text();
  const double total_s = thread_cpu_seconds() - start;
  EXPECT_EQ(back.size(), text.size());  // the file format prints it as the generator wrote it
  std::printf("depth %lld: checked in %.2f s, printed back in %.2f s (CPU time)\n",
              static_cast<long long>(kDepth), check_s, total_s - check_s);
  RecordProperty("check_seconds", std::to_string(check_s));
  const double bound = kSanitized ? 120.0 : 20.0;
  EXPECT_LT(total_s, bound);
}
#else

// Peak resident set size of this process (VmHWM), in bytes.
size_t peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size_pages = 0;
  size_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TEST(ProgramScale, LoadingAHundredMegabyteProgramTakesAtMostFourTimesItsSize) {
  if (kSanitized) GTEST_SKIP() << "the sanitizers' allocator pads every block";
  const std::string path = ::testing::TempDir() + "/chanflow_wide_program.pbtxt";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    cf::testing_support::write_wide_program(f, 100'000'000);
    ASSERT_TRUE(f.good()) << "cannot write " << path;
  }
  size_t file_size = 0;
  {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    file_size = static_cast<size_t>(f.tellg());
  }
  // Gives back what the test main freed, then resets VmHWM to the current resident size (Linux
  // 4.0+), so the peak below is this load's.
  malloc_trim(0);
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
  }
  const size_t before = resident_bytes();
  const size_t peak_before = peak_resident_bytes();
  ASSERT_LE(peak_before, before + (size_t{16} << 20)) << "VmHWM was not reset";
  size_t ops = 0;
  {
    cf::Program p = cf::Program::from_file(path);
    cf::Executor ex;
    ex.prepare(p);
    for (size_t b = 0; b < p.num_blocks(); ++b) ops += p.block(static_cast<int64_t>(b))->ops.size();
  }
  const size_t growth = peak_resident_bytes() - before;
  std::remove(path.c_str());
  const double ratio = static_cast<double>(growth) / static_cast<double>(file_size);
  std::printf("%zu bytes of text, %zu ops: peak resident growth %zu bytes (%.2fx the file)\n",
              file_size, ops, growth, ratio);
  RecordProperty("peak_growth_over_file_size", std::to_string(ratio));
  EXPECT_GT(ops, 200'000u);
  EXPECT_LE(ratio, 4.0);
}
#endif

}  // namespace
