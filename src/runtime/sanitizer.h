// sanitizer.h — announcing fiber switches to AddressSanitizer and ThreadSanitizer (private).
//
// ASan must know which stack is live (fake stacks, stack-use-after-return, unwinding bounds); TSan
// keeps one shadow state per fiber and needs every switch. Both are told only in sanitizer builds;
// elsewhere these are empty inline functions.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define CHANFLOW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHANFLOW_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CHANFLOW_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHANFLOW_TSAN 1
#endif
#endif

#if defined(CHANFLOW_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(CHANFLOW_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace chanflow::detail::san {

// Before switching to the stack [bottom, bottom + size). `fake` saves the current fake stack;
// pass nullptr when the current fiber is exiting for good.
inline void start_switch(void** fake, const void* bottom, std::size_t size) noexcept {
#if defined(CHANFLOW_ASAN)
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}
// Right after a switch lands. Optionally reports the stack we came from.
inline void finish_switch(void* fake, const void** from_bottom, std::size_t* from_size) noexcept {
#if defined(CHANFLOW_ASAN)
  __sanitizer_finish_switch_fiber(fake, from_bottom, from_size);
#else
  (void)fake, (void)from_bottom, (void)from_size;
#endif
}

inline void* tsan_current() noexcept {
#if defined(CHANFLOW_TSAN)
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}
inline void* tsan_create() noexcept {
#if defined(CHANFLOW_TSAN)
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}
inline void tsan_destroy(void* fiber) noexcept {
#if defined(CHANFLOW_TSAN)
  if (fiber != nullptr) __tsan_destroy_fiber(fiber);
#else
  (void)fiber;
#endif
}
inline void tsan_switch(void* fiber) noexcept {
#if defined(CHANFLOW_TSAN)
  __tsan_switch_to_fiber(fiber, 0);
#else
  (void)fiber;
#endif
}
inline void tsan_set_name(void* fiber, const char* name) noexcept {
#if defined(CHANFLOW_TSAN)
  __tsan_set_fiber_name(fiber, name);
#else
  (void)fiber, (void)name;
#endif
}

}  // namespace chanflow::detail::san
