// evaluator.cc — feeding test batches to the evaluation program over channels bound to the run.
#include "evaluator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>

#include "chanflow/runtime/channel.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/select.h"
#include "chanflow/runtime/wait_group.h"
#include "chanflow/tensor/tensor_obj.h"

namespace cf = chanflow;

namespace training {

Evaluator::Evaluator(const std::string& program_path, cf::Executor& executor, const Model& model,
                     const Dataset& d, const std::vector<int64_t>& rows, int64_t batch)
    : program_(cf::Program::from_file(program_path)), executor_(executor) {
  executor_.prepare(program_);
  for (const ParamSpec& s : model.params()) feeds_.push_back(s.name);
  for (std::size_t b = 0; b < rows.size(); b += static_cast<std::size_t>(batch)) {
    batches_.push_back(
        make_batch(d, rows, b, std::min(rows.size() - b, static_cast<std::size_t>(batch))));
  }
}

namespace {

// Sends v on ch unless ctx is done first; false when canceled.
bool send_or_done(const cf::Channel& ch, cf::ObjectRef v, const cf::Context& ctx) {
  std::optional<cf::Unit> done;
  cf::SelectCase cs[] = {ch.select_send(v), cf::SelectCase::recv(ctx.done(), done)};
  return cf::select(std::span<cf::SelectCase>(cs)) == 0;
}

}  // namespace

EvalCounts Evaluator::evaluate(const cf::Context& ctx, const Params& p) {
  cf::Channel images = cf::Channel::make<cf::TensorObj>(2);
  cf::Channel labels = cf::Channel::make<cf::TensorObj>(2);
  cf::Context feeding = cf::with_cancel(ctx);
  auto fed = std::make_shared<cf::WaitGroup>();
  fed->add(1);
  cf::go("eval-feeder", [this, images, labels, feeding, fed] {
    for (const auto& [x, y] : batches_) {
      if (!send_or_done(images, x, feeding) || !send_or_done(labels, y, feeding)) break;
    }
    images.close();  // the program's loop ends when images is closed and drained
    labels.close();
    fed->done();
  });
  std::map<std::string, cf::Tensor> out;
  try {
    std::map<std::string, cf::Tensor> feeds;
    for (std::size_t i = 0; i < feeds_.size(); ++i) feeds.emplace(feeds_[i], p.t.at(i));
    out = executor_.run(program_, feeds, {"correct", "seen"},
                        {{"images", images}, {"labels", labels}});
  } catch (...) {
    feeding.cancel();
    fed->wait();
    throw;
  }
  fed->wait();
  if (ctx.err()) std::rethrow_exception(ctx.err());  // the feeder stopped early: counts are partial
  EvalCounts c;
  c.correct = static_cast<int64_t>(out.at("correct").item<float>());
  c.seen = static_cast<int64_t>(out.at("seen").item<float>());
  return c;
}

}  // namespace training
