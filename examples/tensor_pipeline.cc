// tensor_pipeline — chanflow's layers working together (the README's main job until the flagship
// training pipeline lands):
//   * a loader green thread makes batches (seeded random tensors) and sends them on a buffered
//     channel;
//   * K worker green threads each run a two-layer MLP forward pass (BLAS matmul + relu + softmax)
//     on the batches they receive and send back per-batch results;
//   * the coordinator (main, a plain OS thread) selects over results, a progress ticker (after)
//     and a context deadline, like a Go program would.
// It runs the same work on 1 and on 2 scheduler workers, prints throughput, and checks every
// result against a sequential pass over the same batches.
//
//   build/release/examples/tensor_pipeline [batches] [green-thread workers]
#include <chanflow/chanflow.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

namespace cf = chanflow;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kBatch = 128;
constexpr int64_t kIn = 512;
constexpr int64_t kHidden = 512;
constexpr int64_t kClasses = 10;

struct Batch {
  int64_t id;
  cf::Tensor x;
};
struct Result {
  int64_t id;
  double confidence;  // mean over the batch of the max softmax probability
  int worker;
};

struct Model {
  cf::Tensor w1 = cf::normal({kIn, kHidden}, 0.0, 1.0 / std::sqrt(double(kIn)), 1);
  cf::Tensor w2 = cf::normal({kHidden, kClasses}, 0.0, 1.0 / std::sqrt(double(kHidden)), 2);
  double forward(const cf::Tensor& x) const {
    cf::Tensor h = cf::relu(cf::matmul(x, w1));
    cf::Tensor p = cf::softmax(cf::matmul(h, w2), /*axis=*/1);
    return cf::mean(cf::max(p, {1})).item<float>();
  }
};

cf::Tensor make_batch(int64_t id) {
  return cf::uniform({kBatch, kIn}, -1.0, 1.0, /*seed=*/1000 + static_cast<uint64_t>(id));
}

struct RunStats {
  double seconds;
  std::vector<double> confidence;  // by batch id
  std::vector<int> per_worker;
};

RunStats run_pipeline(const Model& model, int64_t batches, int workers, int scheduler_workers) {
  cf::Scheduler scheduler({.workers = scheduler_workers});
  cf::ScopedDefaultScheduler use(scheduler);
  RunStats stats{0, std::vector<double>(static_cast<size_t>(batches), NAN),
                 std::vector<int>(static_cast<size_t>(workers), 0)};
  const auto t0 = std::chrono::steady_clock::now();

  auto inbox = cf::make_chan<Batch>(8);
  auto results = cf::make_chan<Result>(8);
  cf::go("loader", [inbox, batches] {
    for (int64_t i = 0; i < batches; ++i) inbox.send(Batch{i, make_batch(i)});
    inbox.close();
  });
  auto finished = std::make_shared<cf::WaitGroup>();
  for (int w = 0; w < workers; ++w) {
    finished->add(1);
    cf::go("worker-" + std::to_string(w), [inbox, results, finished, &model, w] {
      for (Batch b : inbox) results.send(Result{b.id, model.forward(b.x), w});
      finished->done();
    });
  }
  cf::go("closer", [finished, results] {
    finished->wait();
    results.close();
  });

  // The coordinator: results, a progress ticker and a deadline, in one select.
  cf::Context ctx = cf::with_timeout(cf::background(), 120s);
  auto ticker = cf::after(250ms);
  int64_t received = 0;
  for (bool open = true; open;) {
    cf::select(cf::on_recv(results,
                           [&](std::optional<Result> r) {
                             if (!r) {
                               open = false;
                               return;
                             }
                             stats.confidence[static_cast<size_t>(r->id)] = r->confidence;
                             ++stats.per_worker[static_cast<size_t>(r->worker)];
                             ++received;
                           }),
               cf::on_recv(ticker,
                           [&](auto) {
                             std::cout << "    progress: " << received << "/" << batches
                                       << " batches\n";
                             ticker = cf::after(250ms);
                           }),
               cf::on_recv(ctx.done(), [&](auto) { std::rethrow_exception(ctx.err()); }));
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batches = argc > 1 ? std::atoll(argv[1]) : 200;
  const int workers = argc > 2 ? std::atoi(argv[2]) : 4;
  if (batches <= 0 || workers <= 0) {
    std::cerr << "usage: tensor_pipeline [batches > 0] [workers > 0]\n";
    return 2;
  }
  const Model model;
  std::cout << "tensor_pipeline: " << batches << " batches of " << kBatch << "x" << kIn
            << " float32 through a " << kIn << "-" << kHidden << "-" << kClasses << " MLP on "
            << workers << " worker green threads\n";

  // The reference: the same batches, sequentially, on this thread (after one warm-up pass, so
  // first-touch page faults and BLAS start-up are not charged to either side).
  (void)model.forward(make_batch(0));
  std::vector<double> expect(static_cast<size_t>(batches));
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < batches; ++i)
    expect[static_cast<size_t>(i)] = model.forward(make_batch(i));
  const double sequential =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "  sequential:        " << std::fixed << std::setprecision(3) << sequential << " s, "
            << std::setprecision(0) << double(batches * kBatch) / sequential << " samples/s\n";

  bool ok = true;
  double one = 0;
  for (int scheduler_workers : {1, 2}) {
    RunStats s = run_pipeline(model, batches, workers, scheduler_workers);
    int mismatches = 0;
    for (int64_t i = 0; i < batches; ++i) {
      if (s.confidence[size_t(i)] != expect[size_t(i)]) ++mismatches;
    }
    if (scheduler_workers == 1) one = s.seconds;
    std::cout << "  " << scheduler_workers << " scheduler worker(s): " << std::setprecision(3)
              << s.seconds << " s, " << std::setprecision(0) << double(batches * kBatch) / s.seconds
              << " samples/s";
    if (scheduler_workers > 1) std::cout << std::setprecision(2) << " (" << one / s.seconds << "x)";
    std::cout << "; batches per green thread:";
    for (int n : s.per_worker) std::cout << ' ' << n;
    std::cout << (mismatches == 0 ? "; all results match the sequential pass\n"
                                  : "; MISMATCHES: " + std::to_string(mismatches) + "\n");
    ok = ok && mismatches == 0;
  }
  return ok ? 0 : 1;
}
