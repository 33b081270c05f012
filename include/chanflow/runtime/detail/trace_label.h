// trace_label.h — how traces and deadlock reports name an object a green thread waits on: a
// channel, or a mutex or wait group given a name (private).
//
// A label is the object's name (empty: unnamed) and a process-unique id. A trace's records carry
// the id, and the trace's writer renders the name registered for it, so an object that reuses a
// dead one's address never shows the dead one's name. The registration and the rendering live in
// src/runtime/trace.cc.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "chanflow/core/export.h"

namespace chanflow::detail {

class CHANFLOW_API TraceLabel {
 public:
  TraceLabel() = default;
  explicit TraceLabel(std::string name) : name_(std::move(name)) {}
  TraceLabel(const TraceLabel&) = delete;
  TraceLabel& operator=(const TraceLabel&) = delete;

  // Before the object is shared with other threads; not thread-safe.
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& name() const noexcept { return name_; }

  // The id, allocated on first call (traces show an unnamed object as "#<id>"). Thread-safe.
  uint64_t id() const noexcept {
    const uint64_t id = id_.load(std::memory_order_relaxed);
    return id != 0 ? id : assign_id();
  }
  // id(), with the name registered with the recording `generation` (the current one, 0: none) on
  // its first use there. Inline: a traced switch asks for it twice. Thread-safe.
  uint64_t trace_obj(uint64_t generation) const noexcept {
    // Relaxed: the mark only avoids registering twice; the table's lock orders the name itself.
    if (name_.empty() || named_in_.load(std::memory_order_relaxed) == generation) return id();
    return register_name(generation);
  }

 private:
  uint64_t assign_id() const noexcept;
  uint64_t register_name(uint64_t generation) const noexcept;

  std::string name_;
  mutable std::atomic<uint64_t> id_{0};
  // The recording (its generation) that has the name registered.
  mutable std::atomic<uint64_t> named_in_{0};
};

}  // namespace chanflow::detail
