// evaluator.cc — feeding test batches to eval.pbtxt over channels bound to the run.
#include "evaluator.h"

#include <algorithm>
#include <optional>
#include <span>

#include "chanflow/runtime/channel.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/select.h"
#include "chanflow/runtime/wait_group.h"
#include "chanflow/tensor/tensor_obj.h"

namespace cf = chanflow;

namespace train_digits {

std::pair<cf::Tensor, cf::Tensor> make_batch(const Digits& d, const std::vector<int64_t>& rows,
                                             std::size_t begin, std::size_t n, int64_t pad_to) {
  const int64_t r = std::max<int64_t>(static_cast<int64_t>(n), pad_to);
  cf::Tensor x = cf::Tensor::zeros({r, kPixels}, cf::DType::kFloat32);
  cf::Tensor y = cf::Tensor::zeros({r, kClasses}, cf::DType::kFloat32);
  float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t row = rows[begin + i];
    std::span<const float> img = d.image(row);
    std::copy(img.begin(), img.end(), xp + static_cast<int64_t>(i) * kPixels);
    yp[static_cast<int64_t>(i) * kClasses + d.labels[static_cast<std::size_t>(row)]] = 1.0f;
  }
  return {x, y};
}

Evaluator::Evaluator(const std::string& program_path, cf::Executor& executor, const Digits& d,
                     const std::vector<int64_t>& rows, int64_t batch)
    : program_(cf::Program::from_file(program_path)), executor_(executor) {
  executor_.prepare(program_);
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
    out = executor_.run(program_, {{"w1", p.t[0]}, {"b1", p.t[1]}, {"w2", p.t[2]}, {"b2", p.t[3]}},
                        {"correct", "seen"}, {{"images", images}, {"labels", labels}});
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

}  // namespace train_digits
