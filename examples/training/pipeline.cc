// pipeline.cc — the loader, worker, evaluator and coordinator green threads of train().
#include "pipeline.h"

#include <algorithm>
#include <map>
#include <optional>

#include "chanflow/core/error.h"
#include "chanflow/exec/executor.h"
#include "chanflow/runtime/chan.h"
#include "chanflow/runtime/group.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/select.h"
#include "chanflow/runtime/timer.h"
#include "chanflow/runtime/trace.h"
#include "chanflow/runtime/wait_group.h"
#include "chanflow/tensor/tensor_obj.h"
#include "evaluator.h"
#include "rng.h"
#include "stage_trace.h"
#include "weight_store.h"

namespace cf = chanflow;

namespace training {
namespace {

// A worker's share of one optimiser step: `rows` real rows, padded to the graph's shape.
struct Shard {
  int64_t step = 0;  // the weights version it must be computed with
  int index = 0;     // position within the step (gradients are summed in this order)
  int count = 0;     // shards in this step
  int64_t rows = 0;
  cf::Tensor x, y;
};

struct Gradient {
  int64_t step = 0;
  int index = 0;
  int count = 0;
  int64_t rows = 0;
  StepOutput out;
};

struct Snapshot {
  int epoch = 0;  // the epoch just completed; 0 with `final` after a deadline
  bool final = false;
  ParamsPtr params;
};

struct EvalDone {
  int epoch = 0;
  bool final = false;
  EvalCounts counts;
};

double seconds_since(int64_t t0_ns) { return static_cast<double>(steady_now_ns() - t0_ns) * 1e-9; }

uint64_t fnv1a(const std::vector<cf::Tensor>& w) {
  uint64_t h = 1469598103934665603ull;
  for (const cf::Tensor& t : w) {
    const cf::Tensor c = t.contiguous();
    const auto* p = reinterpret_cast<const unsigned char*>(c.data<float>());
    const auto n = static_cast<std::size_t>(c.numel()) * sizeof(float);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

bool deadline_passed(const cf::Context& ctx) {
  const std::optional<cf::Clock::time_point> d = ctx.deadline();
  return d && cf::Clock::now() >= *d;
}

// Receives from ch unless ctx is done first (nullopt then, as for a closed channel).
template <class T>
std::optional<T> recv_or_done(const cf::Chan<T>& ch, const cf::Context& ctx) {
  std::optional<T> got;
  cf::select(cf::on_recv(ch, [&](std::optional<T> v) { got = std::move(v); }),
             cf::on_recv(ctx.done(), [](auto) {}));
  return got;
}

// Sends v on ch unless ctx is done first; false when ctx is done.
template <class T>
bool send_or_done(const cf::Chan<T>& ch, T v, const cf::Context& ctx) {
  bool sent = false;
  cf::select(cf::on_send(ch, std::move(v), [&] { sent = true; }),
             cf::on_recv(ctx.done(), [](auto) {}));
  return sent;
}

// One forward + backward per machine, all at once, on an all-padding shard (zero rows add nothing):
// the first OpenBLAS call on each worker allocates its buffers and the tensor buffer cache fills
// here instead of in the first timed step.
void warm_up(const std::vector<std::unique_ptr<TrainStep>>& machines, const Params& p,
             const Dataset& data, int64_t rows) {
  const std::pair<cf::Tensor, cf::Tensor> pad = make_batch(data, {}, 0, 0, rows);
  cf::Group warm;
  for (const auto& m : machines) {
    TrainStep* step = m.get();
    warm.go("warm-up", [&, step] { (void)step->run(warm.context(), p, pad.first, pad.second); });
  }
  warm.wait();
}

void check_config(const Model& model, const Dataset& data, const Split& split,
                  const TrainConfig& c) {
  if (c.workers < 1)
    CHANFLOW_THROW(cf::Error) << "train: --workers must be >= 1, got " << c.workers;
  if (c.epochs < 1) CHANFLOW_THROW(cf::Error) << "train: --epochs must be >= 1, got " << c.epochs;
  if (c.batch_size < 1) {
    CHANFLOW_THROW(cf::Error) << "train: --batch-size must be >= 1, got " << c.batch_size;
  }
  if (c.shards_per_step < 1) {
    CHANFLOW_THROW(cf::Error) << "train: --shards must be >= 1, got " << c.shards_per_step;
  }
  if (split.train.empty() || split.test.empty()) {
    CHANFLOW_THROW(cf::Error) << "train: empty training or test split";
  }
  if (c.delay < 0) CHANFLOW_THROW(cf::Error) << "train: --delay must be >= 0, got " << c.delay;
  if (data.sample_shape != model.sample_shape() || data.classes != model.classes()) {
    CHANFLOW_THROW(cf::ShapeError)
        << "train: the data's samples are " << cf::shape_to_string(data.sample_shape) << " in "
        << data.classes << " classes, " << model.describe() << " takes "
        << cf::shape_to_string(model.sample_shape()) << " in " << model.classes();
  }
  for (const auto* rows : {&split.train, &split.test}) {
    for (int64_t r : *rows) {
      if (r < 0 || r >= data.rows) {
        CHANFLOW_THROW(cf::Error) << "train: split row " << r << " outside the data's " << data.rows
                                  << " rows";
      }
    }
  }
}

}  // namespace

TrainResult train(const Model& model, const Dataset& data, const Split& split,
                  const TrainConfig& cfg) {
  check_config(model, data, split, cfg);
  const int k = cfg.workers;
  const auto n_train = static_cast<int64_t>(split.train.size());
  const int64_t batch = std::min(cfg.batch_size, n_train);
  const int64_t steps_per_epoch = (n_train + batch - 1) / batch;
  const int64_t shards_per_step = std::min<int64_t>(cfg.shards_per_step, batch);
  const int64_t shard_rows = (batch + shards_per_step - 1) / shards_per_step;
  const int64_t total_steps = steps_per_epoch * cfg.epochs;

  // Destroyed in reverse: machines and executor before the scheduler they run on.
  cf::Scheduler scheduler({.workers = k, .pin_workers = cfg.pin_workers});
  cf::ScopedDefaultScheduler use(scheduler);
  StageTrace stages;
  cf::Executor executor({.scheduler = &scheduler});
  Evaluator evaluator(cfg.eval_program, executor, model, data, split.test, cfg.eval_batch);
  std::vector<std::unique_ptr<TrainStep>> machines;
  for (int w = 0; w < k; ++w) machines.push_back(std::make_unique<TrainStep>(model, shard_rows));
  const Params initial{0, model.init(cfg.seed)};
  Updater adam(initial, cfg.adam, k);

  TrainResult result;
  result.graph_nodes = machines[0]->nodes();
  warm_up(machines, initial, data, shard_rows);
  // The trace streams to its file from here on: green threads, channels, the executor's ops, the
  // GoMachines' nodes and the stages below. It stops after cfg.trace_steps optimiser steps (the
  // coordinator) or when training ends, whichever is first; either way the file is complete.
  const bool tracing = !cfg.trace_path.empty();
  if (tracing) cf::trace::start({.path = cfg.trace_path, .max_events = cfg.trace_max_events});
  struct StopTrace {
    bool on;
    ~StopTrace() {
      try {
        if (on && cf::trace::enabled()) cf::trace::stop();
      } catch (const cf::Error&) {
        // Unwinding with another error already: that one is the run's.
      }
    }
  } stop_trace{tracing};

  auto shards = cf::make_chan<Shard>(static_cast<std::size_t>(2 * shards_per_step));
  auto grads = cf::make_chan<Gradient>(static_cast<std::size_t>(k));
  auto snapshots = cf::make_chan<Snapshot>(static_cast<std::size_t>(cfg.epochs + 2));
  auto evals = cf::make_chan<EvalDone>(static_cast<std::size_t>(cfg.epochs + 2));

  cf::Group group;
  const cf::Context run_ctx = group.context();
  // The clock starts before the deadline's: a run stopped by it trained at least that long.
  const int64_t t0 = steady_now_ns();
  const cf::Context train_ctx =
      cfg.deadline.count() > 0 ? cf::with_timeout(run_ctx, cfg.deadline) : cf::with_cancel(run_ctx);
  // Shards of step s use version s - delay, so versions s - delay .. s may be in use at once.
  WeightStore store(std::make_shared<const Params>(initial), cfg.delay + 2);

  // ---- loader: shuffle, batch, shard, send ----
  group.go("loader", [&] {
    Rng rng(cfg.seed ^ 0x5EEDull);
    std::vector<int64_t> order = split.train;
    for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
      shuffle(order, rng);
      for (int64_t s = 0; s < steps_per_epoch; ++s) {
        auto slice = stages.slice("loader", "batch " + std::to_string(epoch * steps_per_epoch + s));
        const int64_t begin = s * batch;
        const int64_t n = std::min(batch, n_train - begin);
        const int count = static_cast<int>((n + shard_rows - 1) / shard_rows);
        for (int i = 0; i < count; ++i) {
          const int64_t first = begin + i * shard_rows;
          const int64_t m = std::min(shard_rows, begin + n - first);
          auto [x, y] = make_batch(data, order, static_cast<std::size_t>(first),
                                   static_cast<std::size_t>(m), shard_rows);
          Shard sh{epoch * steps_per_epoch + s, i, count, m, x, y};
          if (!send_or_done(shards, std::move(sh), train_ctx)) return;
        }
      }
    }
    shards.close();
  });

  // ---- workers: forward + backward on a GoMachine per shard ----
  for (int w = 0; w < k; ++w) {
    group.go("worker-" + std::to_string(w), [&, w] {
      const std::string track = "worker " + std::to_string(w);
      TrainStep& machine = *machines[static_cast<std::size_t>(w)];
      ParamsPtr cur;
      try {
        for (;;) {
          std::optional<Shard> sh = recv_or_done(shards, train_ctx);
          if (!sh) return;  // no more shards, or training stopped
          const int64_t needed = std::max<int64_t>(0, sh->step - cfg.delay);
          if (!cur || cur->version != needed) {
            auto wait = stages.slice(track, "wait for weights v" + std::to_string(needed));
            cur = store.wait(needed, train_ctx);
            if (!cur) return;
          }
          Gradient g{sh->step, sh->index, sh->count, sh->rows, {}};
          {
            auto s = stages.slice(track, "forward+backward step " + std::to_string(sh->step) +
                                             " shard " + std::to_string(sh->index));
            g.out = machine.run(train_ctx, *cur, sh->x, sh->y);
          }
          if (!send_or_done(grads, std::move(g), train_ctx)) return;
        }
      } catch (const cf::Error&) {
        // Stopped by the deadline or another stage's failure. A GoMachine also reads the deadline
        // off the clock, so it may stop before the context's own timer has fired.
        if (train_ctx.err() || deadline_passed(train_ctx)) return;
        throw;
      }
    });
  }

  // ---- evaluator: the evaluation program on each snapshot ----
  group.go("evaluator", [&] {
    for (;;) {
      std::optional<Snapshot> snap = recv_or_done(snapshots, run_ctx);
      if (!snap) break;
      EvalDone done{snap->epoch, snap->final, {}};
      {
        auto s = stages.slice("evaluator", snap->final && snap->epoch == 0
                                               ? std::string("evaluate final weights")
                                               : "evaluate epoch " + std::to_string(snap->epoch));
        done.counts = evaluator.evaluate(run_ctx, *snap->params);
      }
      evals.send(done);  // capacity epochs + 2: never blocks
    }
    evals.close();
  });

  // ---- coordinator: select over gradients, evaluations, ticker, deadline ----
  group.go("coordinator", [&] {
    // Gradients by step (with a delay, step s + 1's can arrive before step s is complete),
    // each step's by shard index.
    struct StepGrads {
      std::vector<std::optional<Gradient>> shards;
      int got = 0;
    };
    std::map<int64_t, StepGrads> pending;
    int64_t version = 0;
    int64_t samples = 0;
    double e_loss = 0, e_correct = 0;
    int64_t e_rows = 0;
    int64_t e_start = t0;
    double last_test = -1;
    bool training = true, evals_open = true;
    cf::Chan<Gradient> grads_in = grads;
    cf::Chan<cf::Unit> deadline = train_ctx.done();
    auto ticker = cf::after(cfg.tick);

    auto snapshot = [&](int epoch, int64_t step_in_epoch, double loss, double acc) {
      ProgressSnapshot s;
      s.epoch = epoch;
      s.epochs = cfg.epochs;
      s.step_in_epoch = step_in_epoch;
      s.steps_per_epoch = steps_per_epoch;
      s.loss = loss;
      s.train_accuracy = acc;
      s.test_accuracy = last_test;
      s.elapsed_s = seconds_since(t0);
      const double train_s = training ? s.elapsed_s : result.train_seconds;
      s.samples_per_s = train_s > 0 ? static_cast<double>(samples) / train_s : 0;
      return s;
    };
    auto end_training = [&](bool by_deadline) {
      training = false;
      grads_in = {};  // nil: never ready again
      deadline = {};
      result.train_seconds = seconds_since(t0);
      result.steps = version;
      result.samples = samples;
      if (by_deadline) {
        result.deadline_reached = true;
        // The epoch the deadline cut short: its loss so far is the run's last word on training.
        if (e_rows > 0) result.final_train_loss = e_loss / static_cast<double>(e_rows);
        stages.instant("coordinator", "deadline");
        snapshots.send(Snapshot{0, true, adam.latest()});
      }
      snapshots.close();
    };
    auto apply_step = [&](const StepGrads& step) {
      auto s = stages.slice("coordinator", "apply step " + std::to_string(version));
      int64_t rows = 0;
      std::vector<const StepOutput*> outs;
      for (int i = 0; i < step.got; ++i) {
        const Gradient& g = *step.shards[static_cast<std::size_t>(i)];
        outs.push_back(&g.out);  // a handle's data never changes (copy on write): no copy
        rows += g.rows;
        e_loss += g.out.loss_sum;
        e_correct += g.out.correct;
      }
      ++version;
      ParamsPtr next = adam.step(outs, rows, version);
      samples += rows;
      e_rows += rows;
      store.publish(next);
      if (tracing && version == cfg.trace_steps) cf::trace::stop();
      if (version % steps_per_epoch == 0) {
        const int epoch = static_cast<int>(version / steps_per_epoch);
        EpochMetrics m;
        m.epoch = epoch;
        m.time_s = seconds_since(t0);
        m.train_loss = e_loss / static_cast<double>(e_rows);
        m.train_accuracy = e_correct / static_cast<double>(e_rows);
        m.test_accuracy = -1;
        m.samples_per_s =
            static_cast<double>(e_rows) / (static_cast<double>(steady_now_ns() - e_start) * 1e-9);
        result.epochs.push_back(m);
        e_loss = e_correct = 0;
        e_rows = 0;
        e_start = steady_now_ns();
        snapshots.send(Snapshot{epoch, epoch == cfg.epochs, next});
        if (version == total_steps) end_training(false);
      }
    };

    while (training || evals_open) {
      cf::select(
          cf::on_recv(grads_in,
                      [&](std::optional<Gradient> g) {
                        CHANFLOW_CHECK(g.has_value()) << "the gradients channel closed";
                        CHANFLOW_CHECK(g->step >= version && g->step <= version + cfg.delay)
                            << "gradient of step " << g->step << " while at step " << version;
                        StepGrads& sg = pending[g->step];
                        if (sg.shards.empty()) sg.shards.resize(static_cast<std::size_t>(g->count));
                        const auto idx = static_cast<std::size_t>(g->index);
                        sg.shards[idx] = std::move(*g);
                        ++sg.got;
                        // Apply every complete step, in order.
                        for (auto it = pending.find(version);
                             training && it != pending.end() &&
                             it->second.got == static_cast<int>(it->second.shards.size());
                             it = pending.find(version)) {
                          StepGrads done = std::move(it->second);
                          pending.erase(it);
                          apply_step(done);
                        }
                      }),
          cf::on_recv(evals,
                      [&](std::optional<EvalDone> r) {
                        if (!r) {
                          evals_open = false;
                          return;
                        }
                        last_test = r->counts.accuracy();
                        if (r->final) {
                          result.test_accuracy = last_test;
                          result.test_rows = r->counts.seen;
                        }
                        if (r->epoch > 0) {
                          EpochMetrics& m = result.epochs[static_cast<std::size_t>(r->epoch - 1)];
                          m.test_accuracy = last_test;
                          if (cfg.on_epoch_done) {
                            cfg.on_epoch_done(snapshot(r->epoch, steps_per_epoch, m.train_loss,
                                                       m.train_accuracy));
                          }
                        }
                      }),
          cf::on_recv(ticker,
                      [&](auto) {
                        if (training && cfg.on_tick) {
                          const int epoch = static_cast<int>(version / steps_per_epoch) + 1;
                          const double rows = std::max<double>(1.0, static_cast<double>(e_rows));
                          cfg.on_tick(snapshot(std::min(epoch, cfg.epochs),
                                               version % steps_per_epoch, e_loss / rows,
                                               e_correct / rows));
                        }
                        ticker = cf::after(cfg.tick);
                      }),
          cf::on_recv(deadline, [&](auto) { end_training(true); }),
          cf::on_recv(run_ctx.done(), [&](auto) { std::rethrow_exception(run_ctx.err()); }));
    }
  });

  group.wait();
  result.wall_seconds = seconds_since(t0);
  result.samples_per_s =
      result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0;
  if (!result.deadline_reached && !result.epochs.empty()) {
    result.final_train_loss = result.epochs.back().train_loss;
  }
  result.weights_hash = fnv1a(adam.latest()->t);
  if (tracing) {
    if (cf::trace::enabled()) cf::trace::stop();
    result.trace_path = cfg.trace_path;
  }
  return result;
}

}  // namespace training
