// The oneTBB flow graph side of the GoMachine per-node comparison: a linear chain and a fan-out
// (source -> N nodes -> sink) of N empty continue_nodes, on `--threads T` worker threads.
// Reports ns per node to run the graph once it is built (and, separately, to build it).
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/version.h>

#include <atomic>
#include <memory>
#include <vector>

#include "peer_harness.h"

namespace flow = tbb::flow;

namespace {

std::atomic<long> g_ran{0};

struct Timing {
  double build_ns, run_ns;  // per node
};

using Node = flow::continue_node<flow::continue_msg>;

auto body() {
  return [](const flow::continue_msg&) { g_ran.fetch_add(1, std::memory_order_relaxed); };
}

Timing chain(int n) {
  g_ran = 0;
  auto t0 = peer::Clock::now();
  flow::graph g;
  std::vector<std::unique_ptr<Node>> nodes;
  nodes.reserve(n);
  for (int i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<Node>(g, body()));
    if (i > 0) flow::make_edge(*nodes[i - 1], *nodes[i]);
  }
  double build = peer::ns_since(t0);
  auto t1 = peer::Clock::now();
  nodes.front()->try_put(flow::continue_msg());
  g.wait_for_all();
  double run = peer::ns_since(t1);
  if (g_ran != n) peer::fail("chain: not every node ran");
  return {build / n, run / n};
}

Timing fan_out(int n) {
  g_ran = 0;
  auto t0 = peer::Clock::now();
  flow::graph g;
  flow::broadcast_node<flow::continue_msg> source(g);
  Node sink(g, [](const flow::continue_msg&) {});
  std::vector<std::unique_ptr<Node>> nodes;
  nodes.reserve(n);
  for (int i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<Node>(g, body()));
    flow::make_edge(source, *nodes.back());
    flow::make_edge(*nodes.back(), sink);
  }
  double build = peer::ns_since(t0);
  auto t1 = peer::Clock::now();
  source.try_put(flow::continue_msg());
  g.wait_for_all();
  double run = peer::ns_since(t1);
  if (g_ran != n) peer::fail("fan-out: not every node ran");
  return {build / n, run / n};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> rest;
  peer::Options o = peer::parse(argc, argv, &rest);
  int threads = 1;
  int n = 100000;
  for (std::size_t i = 0; i + 1 < rest.size(); i += 2) {
    if (rest[i] == "--threads") threads = std::atoi(rest[i + 1].c_str());
    if (rest[i] == "--nodes") n = std::atoi(rest[i + 1].c_str());
  }
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  std::printf("# oneTBB %d.%d flow graph, threads=%d, nodes=%d\n", TBB_VERSION_MAJOR,
              TBB_VERSION_MINOR, threads, n);
  peer::run(o, "graph_chain_run", "ns", [&] { return chain(n).run_ns; });
  peer::run(o, "graph_fanout_run", "ns", [&] { return fan_out(n).run_ns; });
  peer::run(o, "graph_chain_build", "ns", [&] { return chain(n).build_ns; });
  peer::run(o, "graph_fanout_build", "ns", [&] { return fan_out(n).build_ns; });
}
