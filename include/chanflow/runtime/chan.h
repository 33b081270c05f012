// chan.h — Chan<T>: Go's typed channel, for green threads and OS threads alike.
//
// A Chan is a cheap handle: copies share one channel, and the channel lives while a handle does.
// Unbuffered channels (capacity 0) are a rendezvous: a send hands the value straight to a waiting
// receiver. Buffered channels are FIFO. Closing wakes everyone: receivers drain the buffer and then
// see std::nullopt; blocked senders throw ChannelClosedError. Chan<T>{} is the nil channel: every
// send and receive on it blocks forever, close throws.
//
//   auto ch = cf::make_chan<int>(4);
//   cf::go([ch] { for (int i = 0; i < 10; ++i) ch.send(i); ch.close(); });
//   for (int v : ch) std::cout << v;        // receives until closed and drained
//
// Memory ordering: everything a sender wrote before send() happens-before the matching recv()
// returns (the channel lock and the parker claim give acquire/release). close() happens-before a
// receive that observes the close. try_send/try_recv that find nothing to do take no lock (Go's
// non-blocking fast path); their "not ready" is still linearizable (detail/chan_base.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "chanflow/runtime/detail/chan_base.h"

namespace chanflow {

// The clock of timers, deadlines and after().
using Clock = std::chrono::steady_clock;

// The empty message: Context::done() channels carry it, and signalling channels use it.
struct Unit {
  friend bool operator==(Unit /*a*/, Unit /*b*/) noexcept { return true; }
};

template <class T>
class Chan;
template <class T>
Chan<T> make_chan(std::size_t capacity = 0);

namespace detail {
template <class T>
struct ChanCore {
  explicit ChanCore(std::size_t cap) : base(cap, &ElemOpsOf<T>::kOps) {}
  std::atomic<int32_t> refs{1};
  ChanBase base;
};
}  // namespace detail

// A typed channel handle. All methods are thread-safe and may be called from green threads and OS
// threads; blocking ones park a green thread (its worker runs others) or sleep an OS thread.
template <class T>
class Chan {
 public:
  using value_type = T;

  // The nil channel.
  Chan() noexcept = default;
  Chan(const Chan& other) noexcept : core_(other.core_) { retain(); }
  Chan(Chan&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
  Chan& operator=(const Chan& other) noexcept {
    Chan(other).swap(*this);
    return *this;
  }
  Chan& operator=(Chan&& other) noexcept {
    Chan(std::move(other)).swap(*this);
    return *this;
  }
  ~Chan() { release(); }
  void swap(Chan& other) noexcept { std::swap(core_, other.core_); }

  // Sends value. Blocks until a receiver takes it (unbuffered) or there is buffer space. Throws
  // ChannelClosedError if the channel is closed, also when it is closed while the sender waits
  // (the value is then dropped). On a nil channel, blocks forever (a deadlock report names it).
  void send(T value) const { detail::chan_send(base(), &value); }
  // Receives a value. Blocks until one is available; returns std::nullopt once the channel is
  // closed and its buffer drained. On a nil channel, blocks forever.
  std::optional<T> recv() const {
    std::optional<T> out;
    detail::chan_recv(base(), &out);
    return out;
  }
  // Sends without blocking: true if a receiver or the buffer took the value, false otherwise (the
  // value is dropped). Throws ChannelClosedError if closed. Never blocks.
  bool try_send(T value) const {
    detail::ChanBase* b = base();
    // The lock-free "would block" check inline (detail/chan_base.h), the lock only when it may go.
    return b != nullptr && detail::send_may_proceed(b) && detail::chan_try_send(b, &value);
  }
  // Receives without blocking: a value if one is ready, else std::nullopt (nothing ready, or closed
  // and drained — closed() tells which). Never blocks.
  std::optional<T> try_recv() const {
    std::optional<T> out;
    detail::ChanBase* b = base();
    if (b != nullptr && detail::recv_may_proceed(b)) detail::chan_try_recv(b, &out);
    return out;
  }
  // Closes the channel: later sends throw, receivers drain the buffer then get std::nullopt, and
  // every blocked party wakes. Throws ChannelClosedError when already closed or nil. Never blocks.
  void close() const { detail::chan_close(base()); }

  // Buffered values right now (a snapshot); 0 for nil. Never blocks.
  std::size_t size() const noexcept { return core_ != nullptr ? core_->base.size() : 0; }
  // The buffer capacity (0 = unbuffered; 0 for nil).
  std::size_t capacity() const noexcept { return core_ != nullptr ? core_->base.capacity() : 0; }
  // Whether close() has happened (false for nil). Acquire: a true result sees writes before close.
  bool closed() const noexcept { return core_ != nullptr && core_->base.closed(); }
  // Whether this is the nil channel.
  bool is_nil() const noexcept { return core_ == nullptr; }

  // Identity: two handles are equal when they share one channel (nil equals nil).
  friend bool operator==(const Chan& a, const Chan& b) noexcept { return a.core_ == b.core_; }

  // Input iterator receiving until closed and drained: `for (T v : ch)`.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = T*;
    using reference = T&;
    iterator() = default;
    explicit iterator(const Chan* ch) : ch_(ch) { ++*this; }
    T& operator*() { return *cur_; }
    T* operator->() { return &*cur_; }
    iterator& operator++() {
      cur_ = ch_->recv();
      if (!cur_) ch_ = nullptr;
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.ch_ == b.ch_; }

   private:
    const Chan* ch_ = nullptr;
    std::optional<T> cur_;
  };
  // Blocks for the first value (see recv).
  iterator begin() const { return iterator(this); }
  iterator end() const noexcept { return iterator(); }

  // The untyped channel (nullptr for nil). For select and the runtime.
  detail::ChanBase* base() const noexcept { return core_ != nullptr ? &core_->base : nullptr; }

 private:
  friend Chan make_chan<T>(std::size_t);
  explicit Chan(detail::ChanCore<T>* core) noexcept : core_(core) {}
  void retain() const noexcept {
    if (core_ != nullptr) core_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept {
    if (core_ != nullptr && core_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete core_;
    }
    core_ = nullptr;
  }

  detail::ChanCore<T>* core_ = nullptr;
};

// Makes a channel with room for `capacity` buffered values (0: unbuffered). Thread-safe.
template <class T>
Chan<T> make_chan(std::size_t capacity) {
  return Chan<T>(new detail::ChanCore<T>(capacity));
}

// make_chan, with the name the trace shows for the channel (its waits, wake-ups and counter;
// unnamed channels show as "#<id>").
template <class T>
Chan<T> make_chan(std::size_t capacity, std::string name) {
  Chan<T> c = make_chan<T>(capacity);
  c.base()->set_name(std::move(name));
  return c;
}

}  // namespace chanflow
