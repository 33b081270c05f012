// go_machine.cc — one green thread per node, values over channels, per-run state in slots.
//
// Wiring (leaner than the seed's broadcast/merge goroutines, same semantics): each node owns one
// buffered inbox; a producer sends its value once per (subscriber, operand position) edge, which
// is the seed's publish step, and the subscriber's merge is the position tag on each message. The
// inbox holds `expected x window` messages, so a producer never blocks on a send and a node's
// thread only ever parks waiting for input. Every node handles every run exactly once (computing,
// or skipping with a cancellation marker when the run is aborted), so completion is a countdown
// and no node is left waiting when a run fails.
//
// A run whose caller's context ends is abandoned at once: run/stream wake on the context's done
// channel themselves (they never wait for a busy node thread to notice), mark the run aborted and
// throw; the abandoned run's nodes skip their ops and drain in the background, and the next
// run/stream/close (or the destructor) waits for that drain first.
//
// Costs per node and run (callgrind on a 10k-node chain, docs/benchmarks.md): one channel send
// per edge and one receive per operand, a park and a wake-up; no allocation, no lock other than
// the channels', no O(graph) work per run. A node still missing two or more operands yields once
// before parking, so a wide fan-in drains its inbox in batches instead of being woken per value.
//
// Runs live in `window` slots; stream() keeps several in flight. A node processes runs in the
// order their last input arrives, which is run order: its producers emit in run order (by
// induction from the sources, which the feeder kicks in order) and each inbox is FIFO.
#include "chanflow/graph/go_machine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>

#include "chanflow/runtime/chan.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/select.h"
#include "chanflow/runtime/wait_group.h"
#include "machine_common.h"

namespace chanflow {
namespace detail {
namespace {

enum class TraceState : uint8_t { kWaiting, kComputing, kEmitting, kEnd };

struct TraceEvent {
  uint64_t seq;
  TraceState state;
  int64_t ns;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One value on an edge: the operand position it fills at the receiver and the run slot it belongs
// to. Position kCancelPos marks an aborted run's cancellation marker instead of a value.
constexpr uint32_t kCancelPos = 0xFFFFFFFFu;
struct Msg {
  uint32_t pos;
  uint32_t slot;
  Tensor value;
};

struct NodeState;

struct Edge {
  NodeState* to;
  uint32_t pos;
};

// A node's inputs for one run, merged by operand position.
struct Pending {
  std::span<Tensor> args;
  uint32_t got = 0;
  bool cancelled = false;
};

// What a node thread touches per run. The spans point into per-machine arenas laid out in node
// order (GoMachineImpl::edges, pendings, args, outs): a chain or a layer walks memory
// sequentially instead of chasing one heap block per node and field.
struct NodeState {
  const NodeData* data = nullptr;
  Chan<Msg> inbox;
  std::span<Edge> subscribers;
  uint32_t expected = 1;       // messages per run: operand count, or 1 (the kick) for sources
  std::span<Pending> pending;  // per slot
  std::span<Tensor> out;       // per slot: the node's value in that slot's latest run
  std::vector<TraceEvent> trace;
};

// Per slot: one run (or stream item) in flight.
struct RunState {
  Context ctx;          // with_cancel(the caller's context)
  Chan<Unit> ctx_done;  // ctx.done(), cached: nodes poll closed() (one load) instead of err()
  uint64_t seq = 0;
  bool trace = false;
  std::atomic<int64_t> remaining{0};
  std::atomic<bool> aborted{false};    // a node failed or the context ended: skip the ops
  std::atomic<bool> cancelled{false};  // some op was skipped or interrupted by the context
  std::mutex mu;
  std::vector<MachineError::Failure> failures;  // guarded by mu
};

}  // namespace

struct GoMachineImpl {
  std::shared_ptr<GraphImpl> graph;
  int64_t size = 0;
  uint32_t window = 1;
  std::vector<bool> used;
  std::vector<NodeState> nodes;
  // Arenas behind NodeState's spans, sized once at construction (never reallocated).
  std::vector<Edge> edges;
  std::vector<Pending> pendings;
  std::vector<Tensor> args;
  std::vector<Tensor> outs;
  std::vector<NodeState*> sources;
  std::vector<int64_t> input_ids;      // the input nodes, in id order
  std::vector<uint32_t> input_index;   // node id -> index in input_ids (inputs only)
  std::vector<uint32_t> source_input;  // per source: index in input_ids, or kNoInput (constant)
  std::unique_ptr<RunState[]> runs;
  Chan<uint32_t> done;  // slot numbers of finished runs
  WaitGroup exited;
  std::size_t spawned = 0;  // node threads started so far (all of them after the first run)
  std::atomic<bool> busy{false};
  std::atomic<bool> closed{false};
  bool tracing = false;
  int64_t last_slot = -1;  // slot holding the latest completed run's values
  uint64_t next_seq = 0;
  int64_t trace_origin = 0;
  uint32_t outstanding = 0;  // runs begun whose completion has not been received from `done`

  static constexpr uint32_t kNoInput = 0xFFFFFFFFu;

  bool start_threads(const Context& ctx);
  void node_loop(NodeState* n);
  void process(NodeState* n, uint32_t slot);
  void fail(RunState& r, const NodeData& n, std::exception_ptr e);
  void begin(uint32_t slot, const Context& ctx, const std::vector<Tensor>& inputs);
  std::optional<uint32_t> wait_one(const Chan<Unit>& stop);
  void abandon();
  void drain();
  std::vector<Tensor> resolve(const Bindings& b);
  void check_usable(const char* what);
  [[noreturn]] void throw_run_error(RunState& r);
  bool run_failed(RunState& r) const;
};

namespace {

// Clears the busy flag when a run or stream leaves, however it leaves.
struct BusyGuard {
  std::atomic<bool>& flag;
  ~BusyGuard() { flag.store(false, std::memory_order_release); }
};

}  // namespace

void GoMachineImpl::check_usable(const char* what) {
  if (closed.load(std::memory_order_acquire)) {
    CHANFLOW_THROW(Error) << "GoMachine::" << what << ": the machine is closed";
  }
}

// Starts the node threads not started yet. Spawning is not free (a stack each; milliseconds
// each under TSan), so it stops when the caller's context ends: returns false then, and the next
// run starts the rest.
bool GoMachineImpl::start_threads(const Context& ctx) {
  const Chan<Unit> stop = ctx.done();
  for (; spawned < nodes.size(); ++spawned) {
    if (stop.closed()) return false;
    NodeState* np = &nodes[spawned];
    exited.add(1);
    try {
      go("node " + std::to_string(np->data->id) + " " + np->data->name, [this, np] {
        node_loop(np);
        exited.done();
      });
    } catch (...) {
      exited.done();
      throw;
    }
  }
  return true;
}

void GoMachineImpl::node_loop(NodeState* n) {
  // Batching fan-in: while the node still misses >= 2 operands of a run, it does not park as soon
  // as its inbox is empty but yields once first (if a value arrived since its last yield), so the
  // producers queued on this worker deposit their values without waking it one by one.
  bool batch = false;
  bool progressed = false;
  // State "initial": parked here between runs. Closing the inbox ends the thread.
  for (;;) {
    std::optional<Msg> m;
    if (batch) {
      m = n->inbox.try_recv();
      if (!m && progressed) {
        progressed = false;
        yield();
        continue;
      }
      if (m) progressed = true;
    }
    if (!m) {
      m = n->inbox.recv();
      if (!m) return;
      progressed = true;
    }
    const uint32_t slot = m->slot;
    Pending& p = n->pending[slot];
    RunState& r = runs[slot];
    // State "waiting for input": merge by operand position.
    if (p.got == 0 && r.trace) n->trace.push_back({r.seq, TraceState::kWaiting, now_ns()});
    if (m->pos != kCancelPos) {
      p.args[m->pos] = std::move(m->value);
    } else {
      p.cancelled = true;
    }
    if (++p.got < n->expected) {
      batch = n->expected - p.got >= 2;
      continue;
    }
    batch = false;
    process(n, slot);
  }
}

void GoMachineImpl::fail(RunState& r, const NodeData& n, std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.failures.push_back(failure_of(n, std::move(e)));
  }
  r.aborted.store(true, std::memory_order_release);
  r.ctx.cancel();  // interrupts kernels of other nodes between chunks
}

namespace {
// Whether `e` is the context's own cancellation surfacing from a kernel or custom op.
bool deadline_passed(const Context& ctx) {
  std::optional<Clock::time_point> d = ctx.deadline();
  return d && Clock::now() >= *d;
}

bool interrupted_by(const Context& ctx, const std::exception_ptr& e) {
  if (!ctx.err() && !deadline_passed(ctx)) return false;
  try {
    std::rethrow_exception(e);
  } catch (const CanceledError&) {
    return true;
  } catch (const DeadlineExceededError&) {
    return true;
  } catch (...) {
    return false;
  }
}
}  // namespace

void GoMachineImpl::process(NodeState* n, uint32_t slot) {
  RunState& r = runs[slot];
  Pending& p = n->pending[slot];
  const NodeData& d = *n->data;
  // State "computing".
  if (r.trace) n->trace.push_back({r.seq, TraceState::kComputing, now_ns()});
  Tensor value;
  bool skipped = true;
  if (d.op == OpKind::kInput && !p.args[0].defined() && !p.cancelled) {
    skipped = false;  // an unused input with no value: nothing to compute, nothing to send
  } else if (!p.cancelled && !r.aborted.load(std::memory_order_acquire)) {
    if (r.ctx_done.closed()) {  // the caller's context ended (or the run was abandoned)
      r.aborted.store(true, std::memory_order_release);
      r.cancelled.store(true, std::memory_order_relaxed);
    } else {
      try {
        value = eval_node(d, p.args.data(), &r.ctx, std::move(n->out[slot]));
        skipped = false;
      } catch (const FiberUnwind&) {
        throw;
      } catch (...) {
        if (interrupted_by(r.ctx, std::current_exception())) {
          // Stopped by the run's context (the caller's deadline or cancel, or another node's
          // failure): a cancellation, not this node's own failure.
          r.aborted.store(true, std::memory_order_release);
          r.cancelled.store(true, std::memory_order_relaxed);
        } else {
          fail(r, d, std::current_exception());
        }
      }
    }
  } else {
    r.cancelled.store(true, std::memory_order_relaxed);
  }
  n->out[slot] = value;
  for (Tensor& a : p.args) a = Tensor();
  p.got = 0;
  p.cancelled = false;
  // State "emitting output": publish to every subscriber (never blocks: inboxes are sized). The
  // value is shared (a reference count per edge, no copy); the last edge takes our reference.
  if (r.trace) n->trace.push_back({r.seq, TraceState::kEmitting, now_ns()});
  const std::size_t nsubs = n->subscribers.size();
  for (std::size_t i = 0; i < nsubs; ++i) {
    const Edge& e = n->subscribers[i];
    const uint32_t pos = skipped ? kCancelPos : e.pos;
    if (i + 1 < nsubs) {
      // NOLINTNEXTLINE(bugprone-use-after-move): the move happens only in the last iteration
      e.to->inbox.send(Msg{pos, slot, value});
    } else {
      e.to->inbox.send(Msg{pos, slot, std::move(value)});
    }
  }
  // State "end".
  if (r.trace) n->trace.push_back({r.seq, TraceState::kEnd, now_ns()});
  if (r.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) done.send(slot);
}

void GoMachineImpl::begin(uint32_t slot, const Context& ctx, const std::vector<Tensor>& inputs) {
  RunState& r = runs[slot];
  r.ctx = with_cancel(ctx);
  r.ctx_done = r.ctx.done();
  r.seq = next_seq++;
  r.trace = tracing;
  r.failures.clear();
  r.aborted.store(false, std::memory_order_relaxed);
  r.cancelled.store(false, std::memory_order_relaxed);
  r.remaining.store(size, std::memory_order_release);
  ++outstanding;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    NodeState* s = sources[k];
    const uint32_t in = source_input[k];
    s->inbox.send(Msg{0, slot, in == kNoInput ? s->data->value : inputs[in]});
  }
}

std::vector<Tensor> GoMachineImpl::resolve(const Bindings& b) {
  return resolve_input_values(graph.get(), size, b, used, input_ids, input_index);
}

std::optional<uint32_t> GoMachineImpl::wait_one(const Chan<Unit>& stop) {
  std::optional<uint32_t> got;
  if (stop.is_nil()) {
    got = done.recv();
  } else {
    std::optional<Unit> ended;
    SelectCase cases[] = {SelectCase::recv(done, got), SelectCase::recv(stop, ended)};
    if (select(std::span<SelectCase>(cases)) == 1) return std::nullopt;
  }
  CHANFLOW_CHECK(got.has_value()) << "GoMachine: done channel closed";
  --outstanding;
  return got;
}

void GoMachineImpl::abandon() {
  // The caller's context ended: every run in flight skips its remaining ops (their contexts are
  // children of the caller's, so kernels already computing stop between chunks).
  for (uint32_t i = 0; i < window; ++i) runs[i].aborted.store(true, std::memory_order_release);
  last_slot = -1;
}

void GoMachineImpl::drain() {
  while (outstanding > 0) {
    std::optional<uint32_t> got = done.recv();
    CHANFLOW_CHECK(got.has_value()) << "GoMachine: done channel closed";
    --outstanding;
    runs[*got].ctx.cancel();
    runs[*got].failures.clear();
  }
}

bool GoMachineImpl::run_failed(RunState& r) const {
  return !r.failures.empty() || r.cancelled.load(std::memory_order_relaxed);
}

void GoMachineImpl::throw_run_error(RunState& r) {
  std::vector<MachineError::Failure> failures = std::move(r.failures);
  r.failures.clear();
  std::exception_ptr ctx_err = r.ctx.err();
  r.ctx.cancel();
  if (!failures.empty()) {
    std::sort(failures.begin(), failures.end(),
              [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
    throw MachineError(std::move(failures));
  }
  if (ctx_err) std::rethrow_exception(ctx_err);
  if (deadline_passed(r.ctx)) throw DeadlineExceededError("context deadline exceeded");
  throw CanceledError("GoMachine: run cancelled");
}

}  // namespace detail

GoMachine::GoMachine(const Graph& g, GoMachineOptions options)
    : impl_(std::make_unique<detail::GoMachineImpl>()) {
  if (options.window < 1) CHANFLOW_THROW(Error) << "GoMachine: window must be >= 1";
  detail::GoMachineImpl& m = *impl_;
  m.graph = g.impl();
  m.size = g.size();
  m.window = static_cast<uint32_t>(options.window);
  m.used = detail::used_nodes(m.graph.get(), m.size);
  m.input_index.assign(static_cast<std::size_t>(m.size), detail::GoMachineImpl::kNoInput);
  for (int64_t i = 0; i < m.size; ++i) {
    if (m.graph->nodes[static_cast<std::size_t>(i)].op == OpKind::kInput) {
      m.input_index[static_cast<std::size_t>(i)] = static_cast<uint32_t>(m.input_ids.size());
      m.input_ids.push_back(i);
    }
  }
  const auto count = static_cast<std::size_t>(m.size);
  const std::size_t window = m.window;
  m.nodes.resize(count);
  m.runs = std::make_unique<detail::RunState[]>(m.window);
  m.done = make_chan<uint32_t>(m.window);
  // Arena sizes: one edge per operand, window pendings/outs per node, expected x window args.
  std::vector<uint32_t> nsubs(count, 0);
  std::size_t nedges = 0;
  std::size_t nargs = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const detail::NodeData& d = m.graph->nodes[i];
    for (int64_t o : d.operands) ++nsubs[static_cast<std::size_t>(o)];
    nedges += d.operands.size();
    nargs += std::max<std::size_t>(d.operands.size(), 1) * window;
  }
  m.edges.resize(nedges);
  m.pendings.resize(count * window);
  m.args.resize(nargs);
  m.outs.resize(count * window);
  std::size_t edge_at = 0;
  std::size_t arg_at = 0;
  for (std::size_t i = 0; i < count; ++i) {
    detail::NodeState& n = m.nodes[i];
    n.data = &m.graph->nodes[i];
    const std::size_t arity = n.data->operands.size();
    n.expected = static_cast<uint32_t>(std::max<std::size_t>(arity, 1));
    n.subscribers = std::span<detail::Edge>(m.edges.data() + edge_at, 0);
    edge_at += nsubs[i];
    n.pending = std::span<detail::Pending>(m.pendings.data() + i * window, window);
    for (detail::Pending& p : n.pending) {
      p.args = std::span<Tensor>(m.args.data() + arg_at, n.expected);
      arg_at += n.expected;
    }
    n.out = std::span<Tensor>(m.outs.data() + i * window, window);
    n.inbox = make_chan<detail::Msg>(std::size_t{n.expected} * m.window);
    if (arity == 0) {
      m.sources.push_back(&n);
      m.source_input.push_back(m.input_index[i]);
    }
    for (std::size_t k = 0; k < arity; ++k) {
      // Operands come before their users, so the producer's span is already placed.
      detail::NodeState& from = m.nodes[static_cast<std::size_t>(n.data->operands[k])];
      from.subscribers =
          std::span<detail::Edge>(from.subscribers.data(), from.subscribers.size() + 1);
      from.subscribers.back() = {&n, static_cast<uint32_t>(k)};
    }
  }
}

GoMachine::~GoMachine() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

void GoMachine::run(const Context& ctx, const Bindings& inputs) {
  detail::GoMachineImpl& m = *impl_;
  m.check_usable("run");
  if (m.busy.exchange(true, std::memory_order_acq_rel)) {
    CHANFLOW_THROW(Error) << "GoMachine::run: another run or stream is in progress on this "
                             "machine (runs on one machine must not overlap)";
  }
  detail::BusyGuard guard{m.busy};
  m.check_usable("run");
  m.drain();  // a run abandoned on its context: wait for its nodes to finish skipping
  std::vector<Tensor> in = m.resolve(inputs);
  if (m.size == 0) {
    m.last_slot = 0;
    return;
  }
  if (std::exception_ptr e = ctx.err()) {
    m.last_slot = -1;
    std::rethrow_exception(e);
  }
  if (!m.start_threads(ctx)) {
    m.last_slot = -1;
    std::rethrow_exception(ctx.err());
  }
  const uint32_t slot = 0;
  m.begin(slot, ctx, in);
  detail::RunState& r = m.runs[slot];
  std::optional<uint32_t> got = m.wait_one(ctx.done());
  if (!got) {
    // The caller's deadline or cancel: return now; the run drains in the background.
    m.abandon();
    std::exception_ptr e = ctx.err();
    CHANFLOW_CHECK(e != nullptr) << "GoMachine: context done without an error";
    std::rethrow_exception(e);
  }
  CHANFLOW_CHECK(*got == slot) << "GoMachine: unexpected completion";
  if (m.run_failed(r)) {
    m.last_slot = -1;
    m.throw_run_error(r);
  }
  r.ctx.cancel();  // detaches the run's context from the caller's
  m.last_slot = slot;
}

std::vector<std::vector<Tensor>> GoMachine::stream(const Context& ctx,
                                                   const std::vector<Bindings>& items,
                                                   const std::vector<Node>& outputs) {
  detail::GoMachineImpl& m = *impl_;
  m.check_usable("stream");
  if (m.busy.exchange(true, std::memory_order_acq_rel)) {
    CHANFLOW_THROW(Error) << "GoMachine::stream: another run or stream is in progress on this "
                             "machine";
  }
  detail::BusyGuard guard{m.busy};
  m.drain();
  for (const Node& o : outputs) detail::check_node(m.graph.get(), m.size, o, "stream output");
  std::vector<std::vector<Tensor>> results(items.size());
  if (items.empty()) return results;
  if (m.size == 0) {
    for (const Bindings& b : items) (void)m.resolve(b);
    m.last_slot = 0;
    return results;
  }
  if (!m.start_threads(ctx)) {
    m.last_slot = -1;
    std::rethrow_exception(ctx.err());
  }
  const Chan<Unit> stop = ctx.done();
  const std::size_t n = items.size();
  std::size_t fed = 0;
  std::size_t collected = 0;
  std::vector<bool> finished(n, false);
  const uint64_t first_seq = m.next_seq;
  bool stop_feeding = false;
  std::exception_ptr first_error;
  std::size_t in_flight = 0;
  while (collected < n && (!stop_feeding || in_flight > 0)) {
    while (!stop_feeding && fed < n && fed - collected < m.window) {
      std::vector<Tensor> in;
      try {
        in = m.resolve(items[fed]);
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
        stop_feeding = true;
        break;
      }
      const auto slot = static_cast<uint32_t>(fed % m.window);
      m.begin(slot, ctx, in);
      ++fed;
      ++in_flight;
    }
    if (in_flight == 0) break;
    std::optional<uint32_t> got = m.wait_one(stop);
    if (!got) {
      // The caller's deadline or cancel: stop now; the items in flight drain in the background.
      m.abandon();
      std::exception_ptr e = ctx.err();
      CHANFLOW_CHECK(e != nullptr) << "GoMachine: context done without an error";
      std::rethrow_exception(e);
    }
    --in_flight;
    const auto item = static_cast<std::size_t>(m.runs[*got].seq - first_seq);
    finished[item] = true;
    while (collected < fed && finished[collected]) {
      const auto slot = static_cast<uint32_t>(collected % m.window);
      detail::RunState& r = m.runs[slot];
      if (m.run_failed(r)) {
        if (!first_error) {
          try {
            m.throw_run_error(r);
          } catch (...) {
            first_error = std::current_exception();
          }
        }
        r.ctx.cancel();
        stop_feeding = true;
      } else {
        r.ctx.cancel();
        for (const Node& o : outputs) {
          results[collected].push_back(m.nodes[static_cast<std::size_t>(o.id())].out[slot]);
        }
        m.last_slot = slot;
      }
      ++collected;
    }
  }
  if (first_error) {
    m.last_slot = -1;
    std::rethrow_exception(first_error);
  }
  return results;
}

Tensor GoMachine::result(const Node& node) const {
  const detail::GoMachineImpl& m = *impl_;
  detail::check_node(m.graph.get(), m.size, node, "result");
  if (m.last_slot < 0) CHANFLOW_THROW(Error) << "result: the machine has not completed a run";
  const Tensor& v =
      m.nodes[static_cast<std::size_t>(node.id())].out[static_cast<std::size_t>(m.last_slot)];
  if (!v.defined()) {
    CHANFLOW_THROW(Error) << "result: input '" << node.name() << "' had no value in the last run";
  }
  return v;
}

void GoMachine::close() {
  detail::GoMachineImpl& m = *impl_;
  if (m.closed.load(std::memory_order_acquire)) return;
  if (m.busy.exchange(true, std::memory_order_acq_rel)) {
    CHANFLOW_THROW(Error) << "GoMachine::close: a run or stream is in progress";
  }
  detail::BusyGuard guard{m.busy};
  m.drain();
  if (m.closed.exchange(true, std::memory_order_acq_rel)) return;
  if (m.spawned > 0) {
    for (detail::NodeState& n : m.nodes) n.inbox.close();
    m.exited.wait();
  }
}

bool GoMachine::closed() const noexcept { return impl_->closed.load(std::memory_order_acquire); }

void GoMachine::set_tracing(bool on) {
  impl_->tracing = on;
  if (on && impl_->trace_origin == 0) impl_->trace_origin = detail::now_ns();
}

void GoMachine::clear_trace() {
  impl_->drain();  // an abandoned run's nodes may still be recording
  for (detail::NodeState& n : impl_->nodes) n.trace.clear();
}

std::string GoMachine::trace_json() const {
  impl_->drain();  // an abandoned run's nodes may still be recording
  const detail::GoMachineImpl& m = *impl_;
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"tid", 0},
                    {"args", {{"name", "chanflow GoMachine"}}}});
  static const char* kNames[] = {"waiting for input", "computing", "emitting output", "end"};
  for (const detail::NodeState& n : m.nodes) {
    const int64_t tid = n.data->id + 1;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"name", n.data->name + " (" + op_kind_name(n.data->op) + ")"}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
    for (std::size_t i = 0; i < n.trace.size(); ++i) {
      const detail::TraceEvent& e = n.trace[i];
      const double ts = static_cast<double>(e.ns - m.trace_origin) / 1000.0;
      if (e.state == detail::TraceState::kEnd) {
        events.push_back({{"name", kNames[3]},
                          {"ph", "i"},
                          {"s", "t"},
                          {"pid", 1},
                          {"tid", tid},
                          {"ts", ts},
                          {"args", {{"run", e.seq}}}});
        continue;
      }
      const bool has_next = i + 1 < n.trace.size() && n.trace[i + 1].seq == e.seq;
      const double dur = has_next ? static_cast<double>(n.trace[i + 1].ns - e.ns) / 1000.0 : 0.0;
      events.push_back({{"name", kNames[static_cast<int>(e.state)]},
                        {"ph", "X"},
                        {"pid", 1},
                        {"tid", tid},
                        {"ts", ts},
                        {"dur", dur},
                        {"args", {{"run", e.seq}, {"op", op_kind_name(n.data->op)}}}});
    }
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  return doc.dump();
}

void GoMachine::write_trace(const std::string& path) const {
  std::ofstream f(path);
  if (!f) CHANFLOW_THROW(Error) << "write_trace: cannot open '" << path << "'";
  f << trace_json();
  if (!f) CHANFLOW_THROW(Error) << "write_trace: failed writing '" << path << "'";
}

}  // namespace chanflow
