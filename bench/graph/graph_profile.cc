// graph_profile — a driver for profilers (perf record, callgrind): builds one GoMachine graph
// shape, runs it once (warm-up), prints "ready", then runs it `--runs` times and
// prints the wall time per node. Setup (graph building, the first run) stays out of the timed loop,
// so `perf record --delay` or callgrind's --toggle-collect=*GoMachine::run* see only the runs.
//
//   chanflow_graph_profile --shape chain --nodes 100000 --runs 100 --workers 1 [--tape]
//                          [--trace out.json]   (shapes: chain, fanout, ensemble)
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "chanflow/graph.h"
#include "chanflow/runtime.h"
#include "chanflow/tensor.h"

namespace cf = chanflow;

namespace {

cf::Node identity(cf::Graph& g, const std::vector<cf::Node>& in) {
  return g.apply("id", in, in[0].shape(), in[0].dtype(),
                 [](std::span<const cf::Tensor> a, const cf::OpContext&) { return a[0]; });
}

cf::Graph build(const std::string& shape, int n) {
  cf::Graph g;
  if (shape == "chain") {
    cf::Node x = g.scalar(1.0f, "x");
    for (int i = 1; i < n; ++i) x = identity(g, {x});
  } else if (shape == "fanout") {
    cf::Node src = g.scalar(1.0f, "src");
    std::vector<cf::Node> mids;
    for (int i = 0; i < n - 2; ++i) mids.push_back(identity(g, {src}));
    (void)identity(g, mids);
  } else if (shape == "ensemble") {  // as graph_bench.cc: 8 MLPs of 3 layers on one batch
    auto w = [](int64_t r, int64_t c, float scale) {
      return cf::mul(
          cf::uniform({r, c}, -1, 1, static_cast<uint64_t>(r * 131 + c), cf::DType::kFloat32),
          cf::Tensor::scalar(scale, cf::DType::kFloat32));
    };
    cf::Node x = g.constant(w(128, 256, 1.0f), "x");
    cf::Node total;
    for (int k = 0; k < 8; ++k) {
      cf::Node h = cf::relu(cf::matmul(x, g.constant(w(256, 256, 0.06f))));
      h = cf::relu(cf::matmul(h, g.constant(w(256, 256, 0.06f))));
      cf::Node o = cf::softmax(cf::matmul(h, g.constant(w(256, 16, 0.06f))));
      total = total.valid() ? total + o : o;
    }
  } else {
    std::fprintf(stderr, "unknown --shape %s (chain, fanout, ensemble)\n", shape.c_str());
    std::exit(2);
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shape = "chain";
  int nodes = 100000;
  int runs = 100;
  int workers = 1;
  bool tape = false;
  std::string trace;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (a == "--shape") {
      shape = next();
    } else if (a == "--nodes") {
      nodes = std::atoi(next().c_str());
    } else if (a == "--runs") {
      runs = std::atoi(next().c_str());
    } else if (a == "--workers") {
      workers = std::atoi(next().c_str());
    } else if (a == "--trace") {
      trace = next();
    } else if (a == "--tape") {
      tape = true;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  cf::Scheduler sched(cf::SchedulerOptions{.workers = workers});
  cf::ScopedDefaultScheduler use(sched);
  cf::Graph g = build(shape, nodes);
  cf::GoMachine m(g);
  cf::TapeMachine t(g);
  if (tape) {
    t.run();
  } else {
    m.run();
  }
  std::printf("ready\n");
  std::fflush(stdout);
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  };
  const double c0 = cpu_now();
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r) {
    if (tape) {
      t.run();
    } else {
      m.run();
    }
  }
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_now() - c0;
  if (!trace.empty() && !tape) {  // ten more runs, traced (Perfetto JSON)
    cf::trace::start({.path = trace, .max_events = 0});
    for (int r = 0; r < 10; ++r) m.run();
    cf::trace::stop();
  }
  // Wall time is the figure; process CPU time (all threads, idle spinning included) is printed
  // too because on a loaded machine wall time includes the time other processes held the CPUs.
  std::printf("%s %s nodes=%d runs=%d workers=%d: %.1f ns/node (wall), %.1f ns/node (cpu)\n",
              tape ? "tape" : "go", shape.c_str(), nodes, runs, workers, ns / nodes / runs,
              cpu / nodes / runs);
  return 0;
}
