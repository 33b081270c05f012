// executor.cc — Executor: the program cache, feeds and fetches, structured concurrency (wait for
// every green thread, first error wins, deadlocks named by op); op slices go to the
// runtime's trace (run_block.cc).
#include "chanflow/exec/executor.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/exec/channels.h"
#include "chanflow/ir/var_type.h"
#include "kernel.h"
#include "run_state.h"

namespace chanflow {

using exec_detail::PreparedProgram;
using exec_detail::RunState;

namespace {

// Half the physical memory (the default of max_memory_bytes); 0 (unlimited) when unknown.
int64_t half_physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<int64_t>(pages) / 2 * page_size;
}

}  // namespace

Executor::Executor(ExecutorOptions options) : options_(options) {
  if (options_.max_threads < 0) {
    CHANFLOW_THROW(Error) << "ExecutorOptions: max_threads must be >= 0 (0: unlimited), got "
                          << options_.max_threads;
  }
  if (options_.max_memory_bytes < -1) {
    CHANFLOW_THROW(Error) << "ExecutorOptions: max_memory_bytes must be >= 0 (0: unlimited) or -1 "
                             "(half the physical memory), got "
                          << options_.max_memory_bytes;
  }
  if (options_.max_memory_bytes == -1) options_.max_memory_bytes = half_physical_memory();
  if (options_.workers > 0) {
    own_scheduler_ = std::make_unique<Scheduler>(SchedulerOptions{.workers = options_.workers});
  }
}

Executor::~Executor() = default;

Scheduler& Executor::scheduler() const {
  if (own_scheduler_) return *own_scheduler_;
  if (options_.scheduler != nullptr) return *options_.scheduler;
  return scheduler_for_go();
}

std::shared_ptr<const PreparedProgram> Executor::prepared(const Program& program) {
  if (!program.defined()) CHANFLOW_THROW(ProgramError) << "run: the program is null";
  {
    os::LockGuard lock(mu_);
    auto it = cache_.find(program.get());
    if (it != cache_.end()) return it->second.second;
  }
  std::shared_ptr<const PreparedProgram> p = exec_detail::prepare_program(program);
  os::LockGuard lock(mu_);
  if (cache_.size() >= 64) cache_.clear();
  cache_.emplace(program.get(), std::make_pair(program, p));
  return p;
}

void Executor::prepare(const Program& program) { prepared(program); }

namespace {

// The slot of block 0's variable `name`; throws naming `what` (e.g. "feed") when it has none.
size_t block0_slot(const PreparedProgram& p, const std::string& name, const char* what) {
  for (size_t i = 0; i < p.block0_vars.size(); ++i) {
    if (p.block0_vars[i]->name == name) return i;
  }
  throw Error(std::string(what) + " '" + name + "': block 0 declares no variable of that name");
}

void feed_vars(const PreparedProgram& p, const Scope& root,
               const std::map<std::string, Tensor>& feed) {
  for (const auto& [name, t] : feed) {
    const size_t slot = block0_slot(p, name, "feed");
    const VarDesc& v = p.block0_vars[slot];
    if (v->type != static_cast<int64_t>(VarType::kLoDTensor)) {
      CHANFLOW_THROW(TypeError) << "feed '" << name << "': the variable is a "
                                << var_type_name(v->var_type()) << ", not a tensor";
    }
    if (!t.defined()) CHANFLOW_THROW(Error) << "feed '" << name << "': null tensor";
    if (is_valid_var_type(v->data_type) && is_element_type(static_cast<VarType>(v->data_type)) &&
        dtype_from_var_type(static_cast<VarType>(v->data_type)) != t.dtype()) {
      CHANFLOW_THROW(TypeError) << "feed '" << name << "': the variable holds "
                                << var_type_name(static_cast<VarType>(v->data_type))
                                << " tensors, the fed tensor is " << dtype_name(t.dtype());
    }
    root->set(static_cast<int32_t>(slot), t);
  }
}

// Whether a channel carrying `elem` may be bound to a CHANNEL variable declared with `data_type`.
bool channel_fits(int64_t data_type, const ChannelElem& elem) {
  // A channel variable declared without an element type (Fluid's make_channel) takes any channel:
  // what it carries is the channel's business.
  if (data_type == -1) return true;
  if (data_type == static_cast<int64_t>(VarType::kChannel)) {
    return elem.kind == ChannelElem::Kind::kChannel;
  }
  if (elem.kind != ChannelElem::Kind::kTensor) return false;
  if (!elem.dtype) return true;  // any tensor: LOD_TENSOR, or an element type checked by ops
  return is_valid_var_type(data_type) && is_element_type(static_cast<VarType>(data_type)) &&
         *elem.dtype == dtype_from_var_type(static_cast<VarType>(data_type));
}

void feed_channels(const PreparedProgram& p, const Scope& root,
                   const std::map<std::string, Channel>& channels) {
  for (const auto& [name, ch] : channels) {
    const size_t slot = block0_slot(p, name, "channel feed");
    const VarDesc& v = p.block0_vars[slot];
    if (v->type != static_cast<int64_t>(VarType::kChannel)) {
      CHANFLOW_THROW(TypeError) << "channel feed '" << name << "': the variable is a "
                                << var_type_name(v->var_type()) << ", not a channel";
    }
    if (const auto [b, o] = p.block0_channel_create[slot]; b >= 0) {
      // The op would replace the bound channel when it runs, leaving the caller's side talking
      // to a channel the program no longer uses (a hang): refused before anything runs.
      throw ProgramError("channel feed '" + name + "': block " + std::to_string(b) + ", op " +
                             std::to_string(o) +
                             " ('channel_create') makes this variable, so a bound channel would "
                             "be replaced; bind a channel variable the program only declares",
                         b, o, "channel_create");
    }
    if (!ch.defined()) CHANFLOW_THROW(Error) << "channel feed '" << name << "': null channel";
    if (!channel_fits(v->data_type, channel_elem(*ch.get()))) {
      const std::string declared =
          is_valid_var_type(v->data_type)
              ? std::string(var_type_name(static_cast<VarType>(v->data_type)))
              : std::to_string(v->data_type);
      CHANFLOW_THROW(TypeError) << "channel feed '" << name << "': the variable is a channel of "
                                << declared << ", the fed channel carries " << ch->elem_type();
    }
    root->set(static_cast<int32_t>(slot), ch);
  }
}

}  // namespace

namespace {

// Moves a PersistentScope's tensors into a run's block 0 scope and, when the run ends however it
// ends, their final values back (handles: the root keeps its reference for the fetches, and is
// dropped before the next run).
class PersistentVars {
 public:
  PersistentVars(const PreparedProgram& p, const Scope& root, PersistentScope* scope)
      : root_(root), scope_(scope) {
    if (scope_ == nullptr) return;
    std::vector<std::string> names;
    for (size_t i = 0; i < p.block0_vars.size(); ++i) {
      const VarDesc& v = p.block0_vars[i];
      if (v->persistable && v->type == static_cast<int64_t>(VarType::kLoDTensor)) {
        names.push_back(v->name);
        slots_.push_back(static_cast<int32_t>(i));
      }
    }
    names_ = names;
    taken_ = scope_->check_out(names);
    for (size_t k = 0; k < names_.size(); ++k) {
      auto it = taken_.find(names_[k]);
      if (it != taken_.end()) root_->set(slots_[k], it->second);
    }
    // The root holds them now (and the originals stay in taken_ until the run ends, in case it
    // ends without a value: released there so the run's kernels see unique tensors).
    for (auto& [name, t] : taken_) t = Tensor();
  }
  ~PersistentVars() {
    if (scope_ == nullptr) return;
    std::map<std::string, Tensor> back;
    for (size_t k = 0; k < names_.size(); ++k) {
      ObjectRef v = root_->get(slots_[k]);
      if (v.defined() && v->is_instance<TensorObj>()) back.emplace(names_[k], downcast<Tensor>(v));
    }
    scope_->check_in(std::move(back));
  }
  PersistentVars(const PersistentVars&) = delete;
  PersistentVars& operator=(const PersistentVars&) = delete;

 private:
  Scope root_;
  PersistentScope* scope_;
  std::vector<std::string> names_;
  std::vector<int32_t> slots_;
  std::map<std::string, Tensor> taken_;
};

}  // namespace

Scope Executor::run_impl(const Context& ctx, const Program& program,
                         const std::map<std::string, Tensor>& feed,
                         const std::map<std::string, Channel>& channels,
                         PersistentScope* persistent) {
  std::shared_ptr<const PreparedProgram> prog = prepared(program);
  Scope root = Scope::make(Scope(), prog->blocks[0].names);
  const PersistentVars persistent_vars(*prog, root, persistent);
  feed_vars(*prog, root, feed);
  feed_channels(*prog, root, channels);
  if (std::exception_ptr e = ctx.err()) {
    try {
      std::rethrow_exception(e);
    } catch (const DeadlineExceededError&) {
      CHANFLOW_THROW(DeadlineExceededError)
          << "deadline exceeded: the run's context passed its deadline before the run started";
    } catch (...) {
      CHANFLOW_THROW(CanceledError)
          << "canceled: the run's context was canceled before the run started";
    }
  }
  auto rs = std::make_shared<RunState>(prog, &scheduler(), ctx);
  rs->max_threads = options_.max_threads;
  if (options_.max_memory_bytes > 0) {
    rs->budget = std::make_unique<MemoryBudget>(options_.max_memory_bytes, "max_memory_bytes",
                                                "`chanflow` sets it with --max-memory");
  }
  exec_detail::ThreadRecord* main = rs->add_thread("main");

  auto on_error = [&](const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const DeadlockError&) {
      // Name the ops that wait before cancellation wakes them.
      rs->fail(std::make_exception_ptr(DeadlockError(
          "deadlock: every thread of the program is blocked and nothing can wake them; "
          "waiting: " +
          rs->describe_waiting())));
    } catch (...) {
      rs->fail(e);
    }
  };
  try {
    // Tensors the run allocates on this thread are charged to the run (its go threads do the
    // same, run_go); fed tensors and values received from bound channels were not allocated
    // here and are not.
    const MemoryBudget::Use charge_run(rs->budget.get());
    exec_detail::run_block(*rs, 0, root.get(), main);
  } catch (...) {
    on_error(std::current_exception());
  }
  rs->remove_thread(main);
  // Structured concurrency: every green thread the run started finishes before run returns.
  for (;;) {
    try {
      rs->group.wait();  // parks; on an OS thread, DeadlockError when nothing can end the wait
      break;
    } catch (const DeadlockError&) {
      on_error(std::current_exception());
    }
  }
  // Every go thread released its reference to rs before the group counted it done (run_go,
  // control_flow.cc), so rs is ours alone: the run's state (its context, its green threads'
  // records and scopes) is freed here, on the calling thread, before run returns, never by a go
  // thread after run returned. The go thread's decrement happens before its done, which happens
  // before wait() returned (release / acquire), so this load sees it.
  CHANFLOW_CHECK(rs.use_count() == 1)
      << "Executor::run: a go thread still holds the run's state after the group's wait";
  std::exception_ptr error;
  {
    os::LockGuard lock(rs->mu);  // uncontended: rs is ours alone
    error = rs->first;
  }
  if (error) std::rethrow_exception(error);
  return root;
}

Scope Executor::run_scope(const Program& program, const std::map<std::string, Tensor>& feed,
                          const std::map<std::string, Channel>& channels) {
  return run_impl(background(), program, feed, channels);
}

Scope Executor::run_scope(const Context& ctx, const Program& program,
                          const std::map<std::string, Tensor>& feed,
                          const std::map<std::string, Channel>& channels) {
  return run_impl(ctx, program, feed, channels);
}

Scope Executor::run_scope(const Context& ctx, const Program& program, PersistentScope& scope,
                          const std::map<std::string, Tensor>& feed,
                          const std::map<std::string, Channel>& channels) {
  return run_impl(ctx, program, feed, channels, &scope);
}

std::map<std::string, Tensor> Executor::run(const Program& program,
                                            const std::map<std::string, Tensor>& feed,
                                            const std::vector<std::string>& fetch,
                                            const std::map<std::string, Channel>& channels) {
  return run(background(), program, feed, fetch, channels);
}

std::map<std::string, Tensor> Executor::run(const Context& ctx, const Program& program,
                                            const std::map<std::string, Tensor>& feed,
                                            const std::vector<std::string>& fetch,
                                            const std::map<std::string, Channel>& channels) {
  return fetch_from(run_impl(ctx, program, feed, channels), fetch);
}

std::map<std::string, Tensor> Executor::run(const Context& ctx, const Program& program,
                                            PersistentScope& scope,
                                            const std::map<std::string, Tensor>& feed,
                                            const std::vector<std::string>& fetch,
                                            const std::map<std::string, Channel>& channels) {
  return fetch_from(run_impl(ctx, program, feed, channels, &scope), fetch);
}

std::map<std::string, Tensor> Executor::run(const Program& program, PersistentScope& scope,
                                            const std::map<std::string, Tensor>& feed,
                                            const std::vector<std::string>& fetch) {
  return run(background(), program, scope, feed, fetch);
}

std::map<std::string, Tensor> Executor::fetch_from(const Scope& root,
                                                   const std::vector<std::string>& fetch) const {
  std::map<std::string, Tensor> out;
  for (const std::string& name : fetch) {
    std::optional<ObjectRef> v = root.find(name);
    if (!v) CHANFLOW_THROW(Error) << "fetch '" << name << "': block 0 declares no such variable";
    if (!v->defined()) {
      CHANFLOW_THROW(Error) << "fetch '" << name << "': the program never wrote the variable";
    }
    if (!(*v)->is_instance<TensorObj>()) {
      CHANFLOW_THROW(TypeError) << "fetch '" << name << "': the variable holds a "
                                << (*v)->type_key() << ", not a tensor";
    }
    out[name] = downcast<Tensor>(*v);
  }
  return out;
}

}  // namespace chanflow
