// select.h — Go's select: wait on several channel operations, perform exactly one.
//
// select blocks until one case can proceed, performs it, runs that case's body and returns the
// case's index (argument order, from 0). Among ready cases one is chosen uniformly at random; a
// default case runs only when no other case is ready; cases on nil channels never fire; a closed
// channel is ready for receiving (the body gets std::nullopt); a chosen send case on a closed
// channel throws ChannelClosedError. Bodies run after every channel lock is released, so a body
// may use the same channels.
//
//   cf::select(cf::on_recv(data, [&](std::optional<int> v) { ... }),
//              cf::on_send(out, 42, [] { ... }),
//              cf::on_recv(ctx.done(), [](auto) { throw ...; }));
//
// The run-time form (the IR's select op) takes a span of SelectCase built by SelectCase::send /
// recv / default_case, performs the chosen operation and returns its index; the caller then
// dispatches on it. It allocates nothing for up to 16 cases.
//
//   std::optional<int> got;  int v = 7;
//   cf::SelectCase cs[] = {cf::SelectCase::recv(a, got), cf::SelectCase::send(b, v)};
//   switch (cf::select(std::span(cs))) { case 0: use(got); break; case 1: break; }
//
// Memory ordering: as for the equivalent send or recv.
#pragma once

#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

#include "chanflow/core/export.h"
#include "chanflow/runtime/chan.h"

namespace chanflow {

// One case of a run-time select. A value type; it points at caller-owned storage, which must stay
// alive during select().
class SelectCase {
 public:
  enum class Kind : uint8_t { kSend, kRecv, kDefault };

  // A send of `value` on ch; value is moved from only if this case is chosen.
  template <class T>
  static SelectCase send(const Chan<T>& ch, T& value) noexcept {
    return SelectCase(Kind::kSend, ch.base(), &value);
  }
  // A receive from ch into `out`: when chosen, out holds the value, or std::nullopt if ch was
  // closed and drained.
  template <class T>
  static SelectCase recv(const Chan<T>& ch, std::optional<T>& out) noexcept {
    return SelectCase(Kind::kRecv, ch.base(), &out);
  }
  // The default case: chosen when no other case is ready.
  static SelectCase default_case() noexcept { return {Kind::kDefault, nullptr, nullptr}; }
  // Untyped constructor (the type-erased Channel uses it): elem points at the T to send or at the
  // std::optional<T> to receive into, of the channel's element type.
  SelectCase(Kind kind, detail::ChanBase* chan, void* elem) noexcept
      : chan_(chan), elem_(elem), kind_(kind) {}

  Kind kind() const noexcept { return kind_; }
  detail::ChanBase* chan() const noexcept { return chan_; }
  void* elem() const noexcept { return elem_; }

 private:
  detail::ChanBase* chan_;
  void* elem_;
  Kind kind_;
};

// Performs one of `cases` (see the top of this file) and returns its index. Blocks unless a case is
// ready or there is a default case. At most one default case. Throws ChannelClosedError when the
// chosen case is a send on a closed channel. With no cases (or only nil channels and no default),
// blocks forever. Thread-safe.
CHANFLOW_API std::size_t select(std::span<SelectCase> cases);

namespace detail {
template <class T, class F>
struct RecvCase {
  Chan<T> ch;
  F body;
  std::optional<T> value;
  SelectCase make() { return SelectCase::recv(ch, value); }
  void run() { body(std::move(value)); }
};
template <class T, class F>
struct SendCase {
  Chan<T> ch;
  T value;
  F body;
  SelectCase make() { return SelectCase::send(ch, value); }
  void run() { body(); }
};
template <class F>
struct DefaultCase {
  F body;
  SelectCase make() { return SelectCase::default_case(); }
  void run() { body(); }
};
template <class C>
concept SelectCaseBuilder = requires(C& c) {
  { c.make() } -> std::same_as<SelectCase>;
  c.run();
};
template <class Tuple, std::size_t... I>
std::size_t select_tuple(Tuple& t, std::index_sequence<I...> /*unused*/) {
  if constexpr (sizeof...(I) == 0) {
    return ::chanflow::select(std::span<SelectCase>());
  } else {
    SelectCase cases[] = {std::get<I>(t).make()...};
    const std::size_t chosen = ::chanflow::select(std::span<SelectCase>(cases, sizeof...(I)));
    ((chosen == I ? (std::get<I>(t).run(), 0) : 0), ...);
    return chosen;
  }
}
}  // namespace detail

// A receive case: body(std::optional<T>) runs when chosen (std::nullopt: ch is closed).
template <class T, class F>
detail::RecvCase<T, std::decay_t<F>> on_recv(const Chan<T>& ch, F&& body) {
  return {ch, std::forward<F>(body), std::nullopt};
}
// A send case: sends value, then body() runs.
template <class T, class V, class F>
detail::SendCase<T, std::decay_t<F>> on_send(const Chan<T>& ch, V&& value, F&& body) {
  return {ch, T(std::forward<V>(value)), std::forward<F>(body)};
}
// The default case: body() runs when no other case is ready.
template <class F>
detail::DefaultCase<std::decay_t<F>> on_default(F&& body) {
  return {std::forward<F>(body)};
}

// The variadic select (see the top of this file). Returns the index of the case that ran.
template <class... Cases>
requires(detail::SelectCaseBuilder<std::decay_t<Cases>>&&...) std::size_t select(Cases&&... cases) {
  std::tuple<std::decay_t<Cases>...> t(std::forward<Cases>(cases)...);
  return detail::select_tuple(t, std::index_sequence_for<Cases...>{});
}

}  // namespace chanflow
