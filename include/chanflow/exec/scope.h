// scope.h — Scope, the variables of one running block: hierarchical, ref-counted, thread-safe.
//
// The executor gives every run of a block a Scope whose slots hold the block's variables (object
// references: tensors, channels). A scope keeps its parent alive, so a `go` block's scope keeps
// every enclosing scope alive for as long as its green thread runs (Paddle issue 8502: a go block
// may use the enclosing block's variables after that block returned).
//
//   cf::Scope root = cf::Scope::make(cf::Scope(), {"x", "ch"});
//   root.set("x", cf::Tensor::scalar(1, cf::DType::kInt64));
//   cf::Scope child = cf::Scope::make(root, {"y"});
//   child.find("x");          // found in the parent: the tensor above
//
// Values: a variable holds an object reference. Tensors are immutable once shared (copy on
// write), so storing the same tensor in two variables gives value semantics; a channel variable
// copied with `assign` refers to the same channel.
//
// Thread-safety: every member function is thread-safe. A scope that only its own green thread
// uses takes no lock; once mark_shared() was called (the executor calls it when a green thread
// that may touch the scope starts), slot accesses take a per-scope mutex for a few nanoseconds.
// Never blocks for longer than that.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/core/object.h"

namespace chanflow {

// The data node of a Scope.
class CHANFLOW_API ScopeObj : public Object {
 public:
  // `names` names the slots (shared between every scope of one block); `parent` may be null.
  ScopeObj(ObjectPtr<ScopeObj> parent, std::shared_ptr<const std::vector<std::string>> names);

  // The value in slot i (null when never written). Thread-safe.
  ObjectRef get(int32_t i) const {
    if (!shared_.load(std::memory_order_relaxed)) return slots_[static_cast<size_t>(i)];
    std::lock_guard<std::mutex> lock(mu_);
    return slots_[static_cast<size_t>(i)];
  }
  // Stores v in slot i. Thread-safe.
  void set(int32_t i, ObjectRef v) {
    if (!shared_.load(std::memory_order_relaxed)) {
      slots_[static_cast<size_t>(i)] = std::move(v);
      return;
    }
    ObjectRef old;  // released outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    old = std::move(slots_[static_cast<size_t>(i)]);
    slots_[static_cast<size_t>(i)] = std::move(v);
  }
  // Moves the value out of slot i when no other green thread may read this scope (leaving it
  // null), else copies it. Lets a kernel update a uniquely held tensor in place.
  ObjectRef take(int32_t i) {
    if (!shared_.load(std::memory_order_relaxed)) return std::move(slots_[static_cast<size_t>(i)]);
    std::lock_guard<std::mutex> lock(mu_);
    return slots_[static_cast<size_t>(i)];
  }
  // Whether take() moves (no other green thread can see this scope).
  bool is_shared() const noexcept { return shared_.load(std::memory_order_relaxed); }
  // From now on slot accesses lock. Call before another green thread may access the scope
  // (the spawn that starts it orders this store before its accesses). Idempotent.
  void mark_shared() noexcept { shared_.store(true, std::memory_order_relaxed); }

  ScopeObj* parent() const noexcept { return parent_.get(); }
  size_t num_slots() const noexcept { return slots_.size(); }
  const std::vector<std::string>& names() const noexcept { return *names_; }

  static constexpr const char* kTypeKey = "exec.Scope";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ScopeObj, Object);

 private:
  ObjectPtr<ScopeObj> parent_;
  std::shared_ptr<const std::vector<std::string>> names_;
  std::vector<ObjectRef> slots_;
  mutable std::mutex mu_;
  std::atomic<bool> shared_{false};
};

// A handle to a scope. Copies share it. Thread-safe.
class CHANFLOW_API Scope : public ObjectRef {
 public:
  CHANFLOW_DEFINE_MUTABLE_OBJECT_REF(Scope, ObjectRef, ScopeObj);

  // A scope with one slot per name, under `parent` (a null Scope for a root).
  static Scope make(const Scope& parent, std::vector<std::string> names);
  static Scope make(const Scope& parent, std::shared_ptr<const std::vector<std::string>> names);

  // The value of the variable `name` in this scope or the nearest ancestor declaring it; nullopt
  // when no scope declares it (a declared but unwritten variable gives a null ObjectRef). Linear
  // in the number of names: for feeds, fetches and tools, not for the executor's hot path.
  std::optional<ObjectRef> find(std::string_view name) const;
  // Stores v in the nearest scope declaring `name`; throws Error when none does.
  void set(std::string_view name, ObjectRef v) const;
  // The parent scope (null for a root).
  Scope parent() const;
};

}  // namespace chanflow
