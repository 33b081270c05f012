// go_machine.cc — nodes as state machines, run by green threads that hand each other the nodes
// whose inputs are complete; values published along edges; per-run state in slots.
//
// Design (docs/graph.md, "Why runners", has the measurements). A green thread per node, parked on
// a channel between values, would cost a parked stack per node and, per edge, a channel send, a
// wake-up and a switch onto a cold stack. Here a node is still Gorgonia's GoMachine state machine
// (initial -> waiting for input -> computing -> emitting output -> end, once per run, recorded per
// node in the trace), but a node that waits holds no stack and no thread: its state is its slot's
// operand count. The green threads that run nodes ("runners") are spawned per run and per unit of
// parallelism, not per node:
//
// * Publish: a producer writes its value into each subscriber's operand position (the merge by
//   position: 40 - 2 is 38 whatever order the operands arrive in, x + x fills positions 0 and 1)
//   and counts the arrival with one atomic add. The producer whose add completes a node's operands
//   owns that node for the run and pushes it on its runner's private stack of ready nodes.
// * A runner pops the newest ready node and runs it on its own stack, so a chain runs as a loop on
//   one warm stack (no switch, no park, no wake-up per node).
// * Sharing (lazy binary splitting): before a runner starts an op while it holds other ready
//   nodes, it makes sure they are where another worker can take them: if the machine's shared
//   stack ("spill") is empty, it moves them all there and, unless one is already on its way,
//   spawns a "ticket" green thread (Scheduler::go_for_others, work_sharing.h: placed where an
//   idle worker steals it at once). The scheduler's work stealing carries the ticket to an idle
//   worker, where it takes half of the spill (and leaves a ticket for the rest) and becomes a
//   runner. A runner whose own stack runs dry takes half of the spill before it exits. So a chain
//   never touches shared state, a wide graph spreads over the workers a few spills at a time, and
//   no ready node waits behind a long op while a worker is idle. With one worker nothing is shared.
// * Blocking: an op that parks its green thread (a custom op waiting on a channel, say) moves the
//   runner's other ready nodes to the spill first and makes sure a ticket exists
//   (a ScopedParkCallback for the runner's lifetime, work_sharing.h; Go's hand-off of a P on a
//   system call): no ready node waits behind a blocked one, even on one worker.
// * The caller: run() on a plain OS thread runs the sources and then each node while it is the
//   only ready one, on the calling thread, and hands the rest to a runner once the graph has
//   parallel work (run_on_caller).
// * Completion is a countdown per run; a runner subtracts the nodes it finished in batches (when
//   it switches run slot or exits), and the one that reaches zero reports the slot on `done`.
//
// Failure: every node handles every run exactly once (computing, or skipping with a cancellation
// mark that it passes on instead of a value when the run is aborted), so no node is left waiting
// when a run fails. A run whose caller's context ends is abandoned at once: run/stream wake on the
// context's done channel themselves (they never wait for a busy runner to notice), mark the run
// aborted and throw; the abandoned run's nodes skip their ops and drain in the background, and the
// next run/stream/close (or the destructor) waits for that drain first.
//
// Runs live in `window` slots; stream() keeps several in flight, and a node may compute two items
// at once on two runners (each slot has its own operands and output).
#include "chanflow/graph/go_machine.h"

#include <algorithm>
#include <atomic>
#include <span>

#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/chan.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/select.h"
#include "chanflow/runtime/trace.h"
#include "chanflow/runtime/wait_group.h"
#include "chanflow/runtime/work_sharing.h"
#include "machine_common.h"

namespace chanflow {
namespace detail {
namespace {

struct NodeState;

struct Edge {
  NodeState* to;
  uint32_t pos;
};

// A node's inputs for one run (slot), merged by operand position. Each position is written by
// exactly one edge; `got` counts arrivals (values or cancellation marks), and the producer whose
// increment reaches `expected` runs the node. Reset by the node itself before it emits.
struct Pending {
  std::span<Tensor> args;
  std::atomic<uint32_t> got{0};
  std::atomic<bool> cancelled{false};  // some operand's producer skipped its op
};

// A node of the machine. The spans point into per-machine arenas laid out in node order
// (GoMachineImpl::edges, args, outs): a chain or a layer walks memory sequentially.
struct NodeState {
  const NodeData* data = nullptr;
  std::span<Edge> subscribers;
  uint32_t expected = 1;       // arrivals per run: operand count, or 1 (the kick) for sources
  Pending* pending = nullptr;  // per slot
  std::span<Tensor> out;       // per slot: the node's value in that slot's latest run
  // Tracing: the node's lane and the start of its slices' args ({"node":N,"inputs":[...],...),
  // set by the machine's owner before the first traced run hands the node to a runner.
  trace::Track trace_track;
  std::string trace_label;  // its name, or "<op>#<id>"
  std::string trace_args;
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
  os::Mutex mu;
  // Appended to by the run's nodes (fail()).
  std::vector<MachineError::Failure> failures CHANFLOW_GUARDED_BY(mu);

  // `failures` for the machine's owner while no node of this run can fail: before begin() hands
  // the run to a runner, or once its completion came through `done` (the channel orders every
  // append before). Not analysed: that ordering is not a lock. Saves two lock round trips a run.
  std::vector<MachineError::Failure>& failures_between_runs() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    return failures;
  }
};

// A node whose operands for `slot` are complete, owned by the runner holding it.
struct Ready {
  NodeState* node;
  uint32_t slot;
};

}  // namespace

struct Runner;

struct GoMachineImpl {
  std::shared_ptr<GraphImpl> graph;
  int64_t size = 0;
  uint32_t window = 1;
  Scheduler* scheduler = nullptr;  // GoMachineOptions::scheduler (nullptr: cf::go's choice)
  std::vector<bool> used;
  std::unique_ptr<NodeState[]> nodes;  // size entries
  // Arenas behind NodeState's spans and pointers, sized once at construction.
  std::vector<Edge> edges;
  std::unique_ptr<Pending[]> pendings;
  std::vector<Tensor> args;
  std::vector<Tensor> outs;
  std::vector<NodeState*> sources;
  std::vector<int64_t> input_ids;      // the input nodes, in id order
  std::vector<uint32_t> input_index;   // node id -> index in input_ids (inputs only)
  std::vector<uint32_t> source_input;  // per source: index in input_ids, or kNoInput (constant)
  std::unique_ptr<RunState[]> runs;
  Chan<uint32_t> done;  // slot numbers of finished runs
  WaitGroup runners;    // live runner green threads (close and the destructor wait for them)
  // The shared stack of ready nodes (see "Sharing" above), and its size as a lock-free hint.
  os::SpinLock spill_mu;
  std::vector<Ready> spill CHANFLOW_GUARDED_BY(spill_mu);
  std::atomic<std::size_t> spill_size{0};
  std::atomic<int> tickets{0};  // tickets spawned and not started yet
  std::atomic<bool> busy{false};
  std::atomic<bool> closed{false};
  int64_t last_slot = -1;  // slot holding the latest completed run's values
  uint64_t next_seq = 0;
  bool trace_tracks = false;  // the nodes' lanes are registered (trace_args too)
  uint32_t outstanding = 0;   // runs begun whose completion has not been received from `done`

  static constexpr uint32_t kNoInput = 0xFFFFFFFFu;

  std::span<NodeState> node_span() const { return {nodes.get(), static_cast<std::size_t>(size)}; }
  void spawn_runner(std::vector<Ready> work, bool ticket);
  void share(Runner& self);
  bool refill(Runner& self);
  void run_ready(Runner& self);
  void run_on_caller(std::vector<Ready> work);
  void process(Runner& self, NodeState* n, uint32_t slot);
  void run_node(Runner& self, const Ready& r);
  void finish_nodes(uint32_t slot, int64_t count);
  void fail(RunState& r, const NodeData& n, std::exception_ptr e);
  std::vector<Ready> begin(uint32_t slot, const Context& ctx, const std::vector<Tensor>& inputs);
  // Registers a trace lane per node ("gomachine" process) and their slices' args. Owner only.
  void register_trace_tracks();
  std::optional<uint32_t> wait_one(const Chan<Unit>& stop);
  void abandon();
  void drain();
  std::vector<Tensor> resolve(const Bindings& b);
  void check_usable(const char* what);
  [[noreturn]] void throw_run_error(RunState& r);
  bool run_failed(RunState& r) const;
};

// A runner green thread's private state: its stack of ready nodes and the nodes it finished but
// has not yet subtracted from their run's countdown.
struct Runner {
  GoMachineImpl* m;
  std::vector<Ready> ready;
  bool share = false;  // the scheduler has other workers
  uint32_t done_slot = 0;
  int64_t done_count = 0;
};

namespace {

// Clears the busy flag when a run or stream leaves, however it leaves.
struct BusyGuard {
  std::atomic<bool>& flag;
  ~BusyGuard() { flag.store(false, std::memory_order_release); }
};

// The park callback of a runner (ScopedParkCallback): about to park inside an op, it moves its
// other ready nodes where a ticket (maybe on this very worker, while we are parked) will take them.
// Runs inside the park: share() takes only the spill's spin lock and may spawn, as allowed.
void hand_off_on_block(void* arg) {
  auto* self = static_cast<Runner*>(arg);
  if (!self->ready.empty()) self->m->share(*self);
}

}  // namespace

void GoMachineImpl::check_usable(const char* what) {
  if (closed.load(std::memory_order_acquire)) {
    CHANFLOW_THROW(Error) << "GoMachine::" << what << ": the machine is closed";
  }
}

void GoMachineImpl::spawn_runner(std::vector<Ready> work, bool ticket) {
  runners.add(1);
  if (ticket) tickets.fetch_add(1, std::memory_order_relaxed);
  try {
    auto runner = [this, ticket, work = std::move(work)]() mutable {
      struct Exit {
        WaitGroup& wg;
        ~Exit() { wg.done(); }
      } exit{runners};
      if (ticket) tickets.fetch_sub(1, std::memory_order_relaxed);
      Runner self{this, std::move(work)};
      run_ready(self);
    };
    Scheduler& s = scheduler != nullptr ? *scheduler : scheduler_for_go();
    // A ticket exists to be picked up by an idle worker: not from runnext, where a thief would
    // leave it to this (busy) runner for a few microseconds first.
    if (ticket) {
      s.go_for_others("gomachine", std::move(runner));
    } else {
      s.go("gomachine", std::move(runner));
    }
  } catch (...) {
    if (ticket) tickets.fetch_sub(1, std::memory_order_relaxed);
    runners.done();
    throw;
  }
}

// Moves all of self's ready nodes to the spill (the runner keeps only the node it is about to run:
// with more than two workers, a half kept back would wait behind that node's op while a worker is
// idle), and spawns a ticket unless one is on its way.
void GoMachineImpl::share(Runner& self) {
  {
    os::LockGuard lock(spill_mu);
    spill.insert(spill.end(), self.ready.begin(), self.ready.end());
    spill_size.store(spill.size(), std::memory_order_relaxed);
  }
  self.ready.clear();
  if (tickets.load(std::memory_order_relaxed) == 0) spawn_runner({}, /*ticket=*/true);
}

// Takes half of the spill (at least one node) into self's empty stack; false when it is empty.
// What it leaves behind gets a ticket (unless one is on its way), so every node in the spill has
// a green thread coming for it: a third idle worker is not left waiting for a busy runner.
bool GoMachineImpl::refill(Runner& self) {
  if (spill_size.load(std::memory_order_relaxed) == 0) return false;
  std::size_t left = 0;
  {
    os::LockGuard lock(spill_mu);
    const std::size_t n = spill.size();
    if (n == 0) return false;
    const std::size_t take = (n + 1) / 2;
    self.ready.assign(spill.end() - static_cast<std::ptrdiff_t>(take), spill.end());
    spill.resize(n - take);
    left = spill.size();
    spill_size.store(left, std::memory_order_relaxed);
  }
  if (left > 0 && self.share && tickets.load(std::memory_order_relaxed) == 0) {
    spawn_runner({}, /*ticket=*/true);
  }
  return true;
}

void GoMachineImpl::finish_nodes(uint32_t slot, int64_t count) {
  if (count == 0) return;
  if (runs[slot].remaining.fetch_sub(count, std::memory_order_acq_rel) == count) done.send(slot);
}

// Runs one ready node and counts it towards its run's countdown (subtracted in batches, when the
// runner changes run slot or stops: finish_nodes).
void GoMachineImpl::run_node(Runner& self, const Ready& r) {
  if (r.slot != self.done_slot) {
    finish_nodes(self.done_slot, self.done_count);
    self.done_slot = r.slot;
    self.done_count = 0;
  }
  process(self, r.node, r.slot);
  ++self.done_count;
}

void GoMachineImpl::run_ready(Runner& self) {
  self.share = current_scheduler()->workers() > 1;
  ScopedParkCallback on_park(&hand_off_on_block, &self);
  for (;;) {
    if (self.ready.empty() && !refill(self)) break;
    const Ready r = self.ready.back();
    self.ready.pop_back();
    if (self.share && !self.ready.empty() && spill_size.load(std::memory_order_relaxed) == 0) {
      share(self);
    }
    run_node(self, r);
  }
  finish_nodes(self.done_slot, self.done_count);
}

// run() called on a plain OS thread runs the graph's sequential part itself instead of sleeping
// until a worker has run it: waking a sleeping worker and then the caller costs two cross-CPU
// wake-ups, far more than a chain of small ops (docs/graph.md). The caller runs the sources (the
// kick, at the bottom of its stack: no computation) and then an op only while it is the one ready
// node. As soon as it holds another ready node, the graph has parallel work: the caller hands its
// whole stack to one green runner, which shares it with the workers as usual, and waits. It never
// shares nor takes shared work itself: a runner beside every worker only contends with them. It
// runs built-in ops only: a custom op may block on something only a green thread provides, an OS
// thread cannot hand its ready nodes over when it blocks (park callbacks are for green threads),
// and run() could not return at the caller's deadline while the caller is inside the op. A custom
// op gets a green runner of its own.
void GoMachineImpl::run_on_caller(std::vector<Ready> work) {
  Runner self{this, std::move(work)};
  std::size_t kick = self.ready.size();  // kick entries still on the stack (its bottom)
  bool hand_off = true;
  while (!self.ready.empty()) {
    const bool source = self.ready.size() <= kick;
    if (!source && self.ready.size() > 1 && hand_off) {
      try {
        spawn_runner(self.ready, /*ticket=*/false);  // a copy: kept should the spawn fail
        self.ready.clear();
        break;
      } catch (...) {
        // Abort the run; the caller skips through what it holds (process does nothing else).
        const Ready& r = self.ready.back();
        fail(runs[r.slot], *r.node->data, std::current_exception());
        hand_off = false;
      }
    }
    const Ready r = self.ready.back();
    self.ready.pop_back();
    if (source) kick = self.ready.size();
    if (r.node->data->op == OpKind::kCustom &&
        !runs[r.slot].aborted.load(std::memory_order_acquire)) {
      try {
        spawn_runner({r}, /*ticket=*/false);
        continue;
      } catch (...) {
        fail(runs[r.slot], *r.node->data, std::current_exception());  // aborts: process skips it
      }
    }
    run_node(self, r);
  }
  finish_nodes(self.done_slot, self.done_count);
}

void GoMachineImpl::fail(RunState& r, const NodeData& n, std::exception_ptr e) {
  {
    os::LockGuard lock(r.mu);
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

void GoMachineImpl::process(Runner& self, NodeState* n, uint32_t slot) {
  RunState& r = runs[slot];
  Pending& p = n->pending[slot];
  const NodeData& d = *n->data;
  // State "waiting for input" ended with the last operand's arrival; state "computing".
  const int64_t computing_ns = r.trace ? trace::now_ns() : 0;
  const bool operand_cancelled = p.cancelled.load(std::memory_order_relaxed);
  Tensor value;
  bool skipped = true;
  if (d.op == OpKind::kInput && !p.args[0].defined() && !operand_cancelled) {
    skipped = false;  // an unused input with no value: nothing to compute, nothing to send
  } else if (!operand_cancelled && !r.aborted.load(std::memory_order_acquire)) {
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
  p.cancelled.store(false, std::memory_order_relaxed);
  p.got.store(0, std::memory_order_relaxed);
  // State "emitting output": publish to every subscriber. The value is shared (a reference count
  // per edge, no copy); the last edge takes ours. The arrival that completes a subscriber's
  // operands makes it ours to run (release/acquire on `got` orders every producer's write to the
  // operands before the run).
  const std::size_t nsubs = n->subscribers.size();
  for (std::size_t i = 0; i < nsubs; ++i) {
    const Edge& e = n->subscribers[i];
    Pending& q = e.to->pending[slot];
    if (skipped) {
      q.cancelled.store(true, std::memory_order_relaxed);
    } else if (i + 1 < nsubs) {
      // NOLINTNEXTLINE(bugprone-use-after-move): the move happens only in the last iteration
      q.args[e.pos] = value;
    } else {
      q.args[e.pos] = std::move(value);
    }
    if (q.got.fetch_add(1, std::memory_order_acq_rel) + 1 == e.to->expected) {
      self.ready.push_back({e.to, slot});
    }
  }
  // State "end": the node's slice covers computing and emitting.
  if (r.trace) {
    const std::string slice_args = n->trace_args + ",\"run\":" + std::to_string(r.seq) +
                                   (skipped ? ",\"skipped\":true}" : "}");
    trace::slice(n->trace_track, "node", n->trace_label, computing_ns, trace::now_ns(), slice_args);
  }
}

void GoMachineImpl::register_trace_tracks() {
  static const uint32_t kPid = trace::process("gomachine");
  for (NodeState& n : node_span()) {
    const NodeData& d = *n.data;
    n.trace_label =
        d.name.empty() ? detail::node_op_name(d) + ("#" + std::to_string(d.id)) : d.name;
    n.trace_track = trace::thread(kPid, n.trace_label + " (" + detail::node_op_name(d) + ")");
    std::string a = "{\"node\":" + std::to_string(d.id) + ",\"op\":\"" + detail::node_op_name(d) +
                    "\",\"inputs\":[";
    for (std::size_t i = 0; i < d.operands.size(); ++i) {
      a += (i == 0 ? "" : ",") + std::to_string(d.operands[i]);
    }
    n.trace_args = a + "]";
  }
  trace_tracks = true;
}

std::vector<Ready> GoMachineImpl::begin(uint32_t slot, const Context& ctx,
                                        const std::vector<Tensor>& inputs) {
  RunState& r = runs[slot];
  r.ctx = with_cancel(ctx);
  r.ctx_done = r.ctx.done();
  r.seq = next_seq++;
  r.trace = trace::enabled();
  if (r.trace && !trace_tracks) register_trace_tracks();
  r.failures_between_runs().clear();
  r.aborted.store(false, std::memory_order_relaxed);
  r.cancelled.store(false, std::memory_order_relaxed);
  r.remaining.store(size, std::memory_order_release);
  ++outstanding;
  // The kick: every source's single operand is its value; one runner starts with all of them
  // (the caller's spawn publishes these writes to it).
  std::vector<Ready> work;
  work.reserve(sources.size());
  for (std::size_t k = 0; k < sources.size(); ++k) {
    NodeState* s = sources[k];
    const uint32_t in = source_input[k];
    Pending& p = s->pending[slot];
    p.args[0] = in == kNoInput ? s->data->value : inputs[in];
    p.got.store(1, std::memory_order_relaxed);
    work.push_back({s, slot});
  }
  // Run the sources in id order (the runner pops from the back).
  std::reverse(work.begin(), work.end());
  return work;
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
    runs[*got].failures_between_runs().clear();
  }
}

bool GoMachineImpl::run_failed(RunState& r) const {
  return !r.failures_between_runs().empty() || r.cancelled.load(std::memory_order_relaxed);
}

void GoMachineImpl::throw_run_error(RunState& r) {
  std::vector<MachineError::Failure> failures = std::move(r.failures_between_runs());
  r.failures_between_runs().clear();
  std::exception_ptr ctx_err = r.ctx.err();
  r.ctx.cancel();
  if (!failures.empty()) {
    std::sort(failures.begin(), failures.end(),
              [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
    throw MachineError("GoMachine", std::move(failures));
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
  m.scheduler = options.scheduler;
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
  m.nodes = std::make_unique<detail::NodeState[]>(count);
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
  m.pendings = std::make_unique<detail::Pending[]>(count * window);
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
    n.pending = m.pendings.get() + i * window;
    for (std::size_t w = 0; w < window; ++w) {
      n.pending[w].args = std::span<Tensor>(m.args.data() + arg_at, n.expected);
      arg_at += n.expected;
    }
    n.out = std::span<Tensor>(m.outs.data() + i * window, window);
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
  const uint32_t slot = 0;
  std::vector<detail::Ready> kick = m.begin(slot, ctx, in);
  if (in_green_thread()) {
    m.spawn_runner(std::move(kick), false);  // parking here costs a switch, not a wake-up
  } else {
    m.run_on_caller(std::move(kick));
  }
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
  if (std::exception_ptr e = ctx.err()) {
    m.last_slot = -1;
    std::rethrow_exception(e);
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
      m.spawn_runner(m.begin(slot, ctx, in), false);
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
  m.runners.wait();  // the last runner may still be returning after reporting its run
}

bool GoMachine::closed() const noexcept { return impl_->closed.load(std::memory_order_acquire); }

}  // namespace chanflow
