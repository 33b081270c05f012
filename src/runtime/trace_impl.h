// trace_impl.h — recording green-thread lifecycle events for Chrome trace JSON (private).
#pragma once

#include <atomic>
#include <cstdint>

namespace chanflow::detail {

struct Task;
enum class TraceKind : uint8_t { kStart, kResume, kPark, kExit };

extern std::atomic<bool> g_trace_enabled;
void trace_record_slow(TraceKind kind, const Task* t, int worker) noexcept;

// One relaxed load when tracing is off.
inline void trace_record(TraceKind kind, const Task* t, int worker) noexcept {
  if (g_trace_enabled.load(std::memory_order_relaxed)) trace_record_slow(kind, t, worker);
}

}  // namespace chanflow::detail
