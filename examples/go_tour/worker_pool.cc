// worker_pool — Go by Example's worker pool with a WaitGroup: jobs fan out to N workers over a
// buffered channel, results fan back in, and the results channel is closed once every worker is
// done.
#include <chanflow/chanflow.h>

#include <iostream>
#include <string>

namespace cf = chanflow;

int main() {
  constexpr int kWorkers = 8;
  constexpr int kJobs = 10000;
  auto jobs = cf::make_chan<int>(100);
  auto results = cf::make_chan<int64_t>(100);

  cf::WaitGroup wg;
  for (int w = 0; w < kWorkers; ++w) {
    wg.add(1);
    cf::go("worker-" + std::to_string(w), [jobs, results, &wg] {
      for (int job : jobs) results.send(static_cast<int64_t>(job) * job);  // until jobs closes
      wg.done();
    });
  }
  // Close results once all workers have finished, from a green thread of its own.
  cf::go("closer", [&wg, results] {
    wg.wait();
    results.close();
  });
  cf::go("feeder", [jobs] {
    for (int i = 1; i <= kJobs; ++i) jobs.send(i);
    jobs.close();
  });

  int64_t sum = 0;
  int count = 0;
  for (int64_t r : results) {
    sum += r;
    ++count;
  }
  const int64_t expect = static_cast<int64_t>(kJobs) * (kJobs + 1) * (2 * kJobs + 1) / 6;
  std::cout << "worker pool: " << count << " results from " << kWorkers
            << " workers, sum of squares " << sum << (sum == expect ? " (correct)" : " (WRONG)")
            << "\n";
  return sum == expect && count == kJobs ? 0 : 1;
}
