// pipeline_cancel — the Go blog's "Pipelines and cancellation": generate → square → merge, where
// the consumer stops early and cancels a Context so every stage returns instead of leaking.
#include <chanflow/chanflow.h>

#include <iostream>
#include <vector>

namespace cf = chanflow;

// Sends 1, 2, 3 ... until ctx is canceled.
cf::Chan<int64_t> generate(cf::Context ctx, cf::WaitGroup& stages) {
  auto out = cf::make_chan<int64_t>();
  stages.add(1);
  cf::go("generate", [ctx, out, &stages] {
    for (int64_t i = 1;; ++i) {
      bool stop = false;
      cf::select(cf::on_send(out, i, [] {}), cf::on_recv(ctx.done(), [&](auto) { stop = true; }));
      if (stop) break;
    }
    out.close();
    stages.done();
  });
  return out;
}

// Squares what it receives until its input closes or ctx is canceled.
cf::Chan<int64_t> square(cf::Context ctx, cf::Chan<int64_t> in, cf::WaitGroup& stages) {
  auto out = cf::make_chan<int64_t>();
  stages.add(1);
  cf::go("square", [ctx, in, out, &stages] {
    for (int64_t v : in) {
      bool stop = false;
      cf::select(cf::on_send(out, v * v, [] {}),
                 cf::on_recv(ctx.done(), [&](auto) { stop = true; }));
      if (stop) break;
    }
    out.close();
    stages.done();
  });
  return out;
}

// Merges several channels into one (fan-in), closing it when all inputs are done.
cf::Chan<int64_t> merge(cf::Context ctx, std::vector<cf::Chan<int64_t>> ins,
                        cf::WaitGroup& stages) {
  auto out = cf::make_chan<int64_t>();
  auto forwarders = std::make_shared<cf::WaitGroup>();
  for (auto& in : ins) {
    forwarders->add(1);
    stages.add(1);
    cf::go("merge", [ctx, in, out, forwarders, &stages] {
      for (int64_t v : in) {
        bool stop = false;
        cf::select(cf::on_send(out, v, [] {}), cf::on_recv(ctx.done(), [&](auto) { stop = true; }));
        if (stop) break;
      }
      forwarders->done();
      stages.done();
    });
  }
  stages.add(1);
  cf::go("merge-closer", [forwarders, out, &stages] {
    forwarders->wait();
    out.close();
    stages.done();
  });
  return out;
}

int main() {
  cf::WaitGroup stages;
  cf::Context ctx = cf::with_cancel(cf::background());
  auto numbers = generate(ctx, stages);
  // Distribute the squaring over 4 green threads reading the same channel.
  std::vector<cf::Chan<int64_t>> squares;
  for (int i = 0; i < 4; ++i) squares.push_back(square(ctx, numbers, stages));
  auto merged = merge(ctx, squares, stages);

  int64_t sum = 0;
  constexpr int kTake = 1000;
  for (int i = 0; i < kTake; ++i) sum += *merged.recv();
  ctx.cancel();   // we have what we need: every stage sees done() and returns
  stages.wait();  // a hang here would mean a leaked stage
  std::cout << "pipeline: took " << kTake << " squares (sum " << sum
            << "), canceled, every stage returned (" << stages.count() << " left)\n";
  return stages.count() == 0 && sum > 0 ? 0 : 1;
}
