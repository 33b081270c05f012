// memory_budget.cc — MemoryBudget and its accounting (see chanflow/tensor/memory_budget.h).
#include "chanflow/tensor/memory_budget.h"

#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/core/fiber_local.h"
#include "memory_budget.h"

namespace chanflow {
namespace detail {
namespace {
// Relaxed: a statistic for tests, read after the threads that change it were joined.
std::atomic<int64_t> g_alive{0};
}  // namespace

int64_t memory_budgets_alive() noexcept { return g_alive.load(std::memory_order_relaxed); }

void BudgetState::charge(int64_t n) {
  // Relaxed: the counter publishes no data, it only bounds; read-modify-writes of one atomic are
  // totally ordered whatever their memory order, so every charge and release is counted once.
  // The add reserves first, so concurrent charges never pass the limit together (one of two that
  // each fit alone may fail: the bound is what is promised).
  const int64_t after = (word.fetch_add(n, std::memory_order_relaxed) + n) & ~kOwnerGone;
  if (after > limit) {
    word.fetch_sub(n, std::memory_order_relaxed);
    std::string message = "tensor memory: allocating " + std::to_string(n) +
                          " bytes would bring the live tensor bytes to " + std::to_string(after) +
                          ", over the limit of " + std::to_string(limit) + " bytes (" + limit_name;
    if (!how_to_change.empty()) message += "; " + how_to_change;
    throw LimitError(message + ")", limit_name);
  }
}

void BudgetState::release(int64_t n) noexcept {
  // acq_rel: the thread that deletes the state must see every other thread's last use of it (the
  // reference-count rule).
  const int64_t after = word.fetch_sub(n, std::memory_order_acq_rel) - n;
  CHANFLOW_CHECK((after & ~kOwnerGone) >= 0) << "MemoryBudget: more bytes given back than charged";
  if (after == kOwnerGone) {
    delete this;
    g_alive.fetch_sub(1, std::memory_order_relaxed);
  }
}

BudgetState* current_budget() noexcept { return static_cast<BudgetState*>(fiber_local_word()); }

}  // namespace detail

MemoryBudget::MemoryBudget(int64_t limit_bytes, std::string limit, std::string how_to_change) {
  if (limit_bytes <= 0) {
    CHANFLOW_THROW(Error) << "MemoryBudget: the limit (" << limit << ") must be > 0 bytes, got "
                          << limit_bytes;
  }
  state_ = new detail::BudgetState();
  state_->limit = limit_bytes;
  state_->limit_name = std::move(limit);
  state_->how_to_change = std::move(how_to_change);
  detail::g_alive.fetch_add(1, std::memory_order_relaxed);
}

MemoryBudget::~MemoryBudget() {
  // acq_rel, as in release(): whoever deletes the state saw every use of it.
  if (state_->word.fetch_add(detail::BudgetState::kOwnerGone, std::memory_order_acq_rel) == 0) {
    delete state_;
    detail::g_alive.fetch_sub(1, std::memory_order_relaxed);
  }
}

int64_t MemoryBudget::used() const noexcept {
  return state_->word.load(std::memory_order_relaxed) & ~detail::BudgetState::kOwnerGone;
}

int64_t MemoryBudget::limit() const noexcept { return state_->limit; }

MemoryBudget::Use::Use(const MemoryBudget* budget) noexcept : previous_(fiber_local_word()) {
  set_fiber_local_word(budget != nullptr ? budget->state_ : nullptr);
}

MemoryBudget::Use::~Use() { set_fiber_local_word(previous_); }

}  // namespace chanflow
