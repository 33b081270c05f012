// go_machine.h — runs a Graph with its nodes as concurrent state machines (Gorgonia's GoMachine,
// finished).
//
// Each node is Gorgonia's GoMachine state machine: initial -> waiting for input -> computing ->
// emitting output -> end, once per run. A producer publishes its value to each subscriber, tagged
// with the operand position it fills there, and the subscriber merges by position (so 40 - 2 is 38
// whatever order the operands arrive in, and x + x receives x at positions 0 and 1). A node
// waiting for input holds no green thread: the producer that completes a node's
// operands runs it next on its own green thread, and ready nodes are shared with idle workers
// (docs/graph.md, "Why runners"). Independent nodes run in parallel; ops may block.
//
//   cf::GoMachine m(g);
//   m.run(cf::with_timeout(cf::background(), 1s));       // throws MachineError / ctx's error
//   cf::Tensor v = m.result(y);
//   m.run(cf::background(), {{x, other}});               // re-run with new inputs
//   auto outs = m.stream(cf::background(), {{{x, a}}, {{x, b}}}, {y});   // pipelined
//   m.close();
//
// Failure: the first node whose op throws cancels the run; nodes not yet computed skip their op
// and pass a cancellation marker downstream, so every node still reaches its end state. run then
// throws MachineError listing each node that failed on its own (never the cancelled ones). A
// context cancelled or past its deadline makes run/stream throw its CanceledError/
// DeadlineExceededError at once, even while every worker is busy in an op: the caller waits on the
// context itself. The abandoned run drains in the background (ops already computing finish or
// stop at their next chunk — large kernels check the context between chunks, custom ops should
// use OpContext — and the rest skip); the next run, stream or close (and the destructor) first
// waits for that drain. Thread-safety: run, stream and close may be called from any thread
// (green or OS); one run/stream at a time per machine — a concurrent call throws Error. result
// must not race with a run. While the runtime's trace is on (chanflow/runtime/trace.h), each run
// records one "node" slice per node on the node's lane of the "gomachine" process, with the node
// id and its input node ids (docs/runtime.md, "Tracing").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/graph/graph.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/scheduler.h"

namespace chanflow {

namespace detail {
struct GoMachineImpl;
}

struct GoMachineOptions {
  // stream(): how many input bindings may be in flight in the graph at once (>= 1).
  int window = 4;
  // The scheduler whose workers run the nodes (not owned; must outlive the machine). nullptr: the
  // scheduler cf::go uses from the thread that calls run/stream (the caller's own scheduler on a
  // green thread, else the scoped default, else the process-wide default).
  Scheduler* scheduler = nullptr;
};

class CHANFLOW_API GoMachine {
 public:
  // Runs the nodes the graph has now (nodes added later are not part of this machine). Starts no
  // green threads (runs do). Never blocks.
  explicit GoMachine(const Graph& g, GoMachineOptions options = {});
  // close()s (waits for the last run's green threads to return). Destroy the machine before its
  // scheduler.
  ~GoMachine();
  GoMachine(const GoMachine&) = delete;
  GoMachine& operator=(const GoMachine&) = delete;

  // Computes every node; blocks until every node reached its end state, or until `ctx` ends
  // (then throws its error at once; see above). Inputs take `inputs`,
  // else their Graph::set value (Error naming a used input with neither). Throws MachineError,
  // the context's error, Error after close() or when another run/stream is in progress. An empty
  // graph returns at once.
  void run(const Context& ctx, const Bindings& inputs = {});
  void run() { run(background()); }

  // Pipelines `items` (one set of bindings each) through the graph, up to options.window at once
  // so successive items are computed by different nodes at the same time. Returns, in item order,
  // the values of `outputs` for each item. Blocks until all are done. On a failure it stops
  // feeding, lets the items in flight finish and throws like run (for the first failed item).
  std::vector<std::vector<Tensor>> stream(const Context& ctx, const std::vector<Bindings>& items,
                                          const std::vector<Node>& outputs);

  // The value `node` had in the last completed run (or stream item). Throws Error before any
  // successful run, for a node outside the machine, or for an unbound unused input.
  Tensor result(const Node& node) const;

  // Waits for an abandoned run to drain and for the last green threads to return. Idempotent.
  // Throws Error while a run is in progress. After close, run/stream throw Error; result keeps
  // working.
  void close();
  bool closed() const noexcept;

 private:
  std::unique_ptr<detail::GoMachineImpl> impl_;
};

}  // namespace chanflow
