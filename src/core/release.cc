// release.cc — destroying objects whose count reached zero without unbounded recursion.
//
// A container's destructor releases its elements; an element that was held only there reaches
// zero inside that destructor. Destroyed at once, every level of nesting adds a few stack frames
// (channel → buffered channel → ..., scope → parent scope → ..., Array → Array → ...), and a
// chain of a few thousand levels overflows a green thread's stack, a few hundred thousand the
// main thread's. So deleters nest only kMaxNesting deep: the deleter running at that depth does
// not destroy the objects it releases; they wait on a per-thread list, and the same frame runs
// them (and what they release in turn) one after another once that deleter returns. Shallow
// releases — an object, a tensor and its storage, an Array of a thousand Ints — never touch the
// list. (CPython's "trashcan" defers deallocations the same way past a nesting depth.)
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "chanflow/core/object.h"

namespace chanflow::detail {
namespace {

// The objects whose deleter is due on one OS thread, as a stack. Constant-initialised and
// trivially destructible, so the thread_local needs no guard and no exit handler: it holds memory
// only during a drain (the spill is freed when the drain ends).
struct PendingDeleters {
  static constexpr uint32_t kInline = 32;

  uint32_t depth = 0;  // deleters running on this thread, nested in one another
  uint32_t size = 0;   // entries in items()
  uint32_t capacity = kInline;
  Object** spill = nullptr;  // heap storage once more than kInline wait, else null
  Object* local[kInline] = {};

  Object** items() noexcept { return spill != nullptr ? spill : local; }

  // Adds obj; false only when the list is full and no memory is left to grow it.
  bool push(Object* obj) noexcept {
    if (size == capacity && !grow()) return false;
    items()[size++] = obj;
    return true;
  }
  bool grow() noexcept {
    if (capacity > UINT32_MAX / 2) return false;
    const uint32_t bigger = capacity * 2;
    void* p = spill == nullptr ? std::malloc(sizeof(Object*) * bigger)
                               : std::realloc(spill, sizeof(Object*) * bigger);
    if (p == nullptr) return false;
    if (spill == nullptr) std::memcpy(p, local, sizeof(Object*) * size);
    spill = static_cast<Object**>(p);
    capacity = bigger;
    return true;
  }
  void free_spill() noexcept {
    std::free(spill);
    spill = nullptr;
    capacity = kInline;
  }
};

// How deep deleters may nest before the deepest one queues what it releases: a few kilobytes of
// stack at most, while most releases (a few levels) never reach it.
constexpr uint32_t kMaxNesting = 16;

// The release of an object at depth kMaxNesting - 1 or deeper. At kMaxNesting - 1 it runs the
// pending list from this frame: obj's deleter first, then the objects it released, each followed
// by what it releases in turn (the segment one deleter pushed is reversed on top of the stack, so
// the first it released runs next); at kMaxNesting (under that frame) it only pushes. Out of line
// so that run_deleter's common path saves few registers; noipa so the compiler does not
// specialise it for run_deleter's one argument and reach the thread_local from here (the list is
// reached through run_deleter only). Clang has no noipa: noinline there, and run_deleter hides
// the list's address from its constant propagation (the ctest core_release_list_out_of_line_test
// checks the objects of either compiler).
#if defined(__clang__)
[[gnu::noinline]]
#else
[[gnu::noipa]]
#endif
void run_deep(Object* obj, PendingDeleters& q) noexcept {
  if (q.depth != kMaxNesting - 1) {
    if (!q.push(obj)) ObjectUnsafe::deleter(obj)(obj);
    return;
  }
  q.depth = kMaxNesting;
  for (;;) {
    const uint32_t before = q.size;
    ObjectUnsafe::deleter(obj)(obj);
    if (q.size - before > 1) std::reverse(q.items() + before, q.items() + q.size);
    if (q.size == 0) break;
    obj = q.items()[--q.size];
  }
  if (q.spill != nullptr) q.free_spill();
  q.depth = kMaxNesting - 1;
}

}  // namespace

// Invariants of the pending list (`pending` below):
//  - Owner: the OS thread running this call. It is reached only here (and in run_deep, called from
//    here with it), and this function is never inlined (a ctest,
//    core_release_list_out_of_line_test, checks the built object), so its address is taken on the
//    thread that runs the call. That is enough because nothing in a release parks a green thread
//    (FDeleter's contract: deleters do not block on channels, cf::Mutex or waits; the library's
//    own — channels, scopes, tensors, containers, pools — only free memory and take OS-level
//    locks), so a release starts and ends on one worker and no other green thread runs on that
//    worker in between.
//  - Depth: `depth` counts the deleters running on this thread inside one another. Below
//    kMaxNesting - 1 a deleter runs nested, as a plain recursive release would. The one at depth
//    kMaxNesting - 1 runs in run_deep, which sets the depth to kMaxNesting, so every release
//    under it only pushes; run_deep runs the list until it is empty before it returns. So the
//    stack holds at most kMaxNesting deleters, the list is empty and holds no memory between two
//    top-level releases (the spill is freed when it empties), and everything a release made
//    unreachable is destroyed before the release returns.
//  - Order: that of recursive destruction — depth first, siblings in the order they were
//    released — except that below kMaxNesting an object's destructor finishes before the objects
//    it released are destroyed. The list holds at most (depth of the rest) x (references one
//    deleter releases) entries: two for a chain of containers of one element and a link each.
//  - Each object is pushed once (its count reached zero once, on this thread) and popped once,
//    so its deleter runs exactly once.
//  - Exceptions: deleters cannot throw out of here (this function and Object::dec_ref are
//    noexcept: a throwing destructor ends the process in std::terminate), so `depth` is never left
//    raised by an abandoned release.
//  - No memory: when the list cannot grow, the deleter runs at once instead (nested, as without
//    this list): a deep chain may then use stack again, but nothing leaks or is lost.
__attribute__((noinline)) void run_deleter(Object* obj) noexcept {
  static constinit thread_local PendingDeleters pending;
#if defined(__clang__)
  // Opaque to the optimiser: otherwise Clang passes the thread_local's address into run_deep as a
  // constant (interprocedural constant propagation), which noinline does not prevent.
  PendingDeleters* list = &pending;
  asm("" : "+r"(list));
  PendingDeleters& q = *list;
#else
  PendingDeleters& q = pending;
#endif
  if (q.depth >= kMaxNesting - 1) [[unlikely]] {
    run_deep(obj, q);
    return;
  }
  ++q.depth;  // the common case: a shallow release
  ObjectUnsafe::deleter(obj)(obj);
  --q.depth;
}

}  // namespace chanflow::detail
