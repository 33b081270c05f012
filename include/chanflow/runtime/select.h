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
// Cost: a select with one operation and a default is that non-blocking operation (try_recv /
// try_send), lock-free when nothing is ready; a select whose first poll finds a ready case locks
// only that case's channel; building the cases copies no channel handle (lvalues are borrowed,
// temporaries moved in). Memory ordering: as for the equivalent send or recv.
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
// The case objects of the variadic select. A case built from a channel lvalue borrows it (no
// reference-count traffic: `owned` stays nil and `chan` points at the shared channel, which the
// caller's handle keeps alive); one built from an rvalue (ctx.done(), after(d)) takes the handle
// over by move. Either way no atomic operation is spent on the handle.
template <class T, class F>
struct RecvCase {
  static constexpr SelectCase::Kind kKind = SelectCase::Kind::kRecv;
  Chan<T> owned;
  ChanBase* chan;
  F body;
  std::optional<T> value;
  SelectCase make() noexcept { return {kKind, chan, &value}; }
  // The non-blocking form (a one-case select with default): true when the receive happened (a
  // value, or the channel is closed and drained: value stays empty).
  bool try_now() {
    return chan != nullptr && recv_may_proceed(chan) && chan_try_recv(chan, &value) != 0;
  }
  void run() { body(std::move(value)); }
};
template <class T, class F>
struct SendCase {
  static constexpr SelectCase::Kind kKind = SelectCase::Kind::kSend;
  Chan<T> owned;
  ChanBase* chan;
  T value;
  F body;
  SelectCase make() noexcept { return {kKind, chan, &value}; }
  // True when the value was taken; throws ChannelClosedError on a closed channel.
  bool try_now() {
    return chan != nullptr && send_may_proceed(chan) && chan_try_send(chan, &value);
  }
  void run() { body(); }
};
template <class F>
struct DefaultCase {
  static constexpr SelectCase::Kind kKind = SelectCase::Kind::kDefault;
  F body;
  SelectCase make() noexcept { return SelectCase::default_case(); }
  void run() { body(); }
};
template <class C>
concept SelectCaseBuilder = requires(C& c) {
  { c.make() } -> std::same_as<SelectCase>;
  c.run();
};

// Runs the body of case number `chosen`.
template <class... Cs>
void run_chosen(std::size_t chosen, Cs&... cs) {
  std::size_t i = 0;
  (void)((i++ == chosen ? (cs.run(), true) : false) || ...);
}

// One operation and a default: the non-blocking operation itself, as Go compiles it (no case
// array, no poll order, no lock when the lock-free check says "not ready").
template <class Op, class Def>
std::size_t select_nonblocking(Op& op, std::size_t op_index, Def& def, std::size_t def_index) {
  if (op.try_now()) {
    op.run();
    return op_index;
  }
  def.run();
  return def_index;
}

// Whether case type C is a default case / has the non-blocking form try_now().
template <class C>
constexpr bool is_default_case() {
  if constexpr (requires { C::kKind; }) {
    return C::kKind == SelectCase::Kind::kDefault;
  } else {
    return false;
  }
}
template <class C>
concept NonblockingCase = requires(C& c) {
  { c.try_now() } -> std::same_as<bool>;
};

// The variadic select on case objects the caller owns (they are consumed: values move out).
template <class... Cs>
std::size_t select_cases(Cs&... cs) {
  if constexpr (sizeof...(Cs) == 0) {
    return ::chanflow::select(std::span<SelectCase>());
  } else {
    SelectCase cases[] = {cs.make()...};
    const std::size_t chosen = ::chanflow::select(std::span<SelectCase>(cases, sizeof...(Cs)));
    run_chosen(chosen, cs...);
    return chosen;
  }
}
template <class A, class B>
std::size_t select_cases(A& a, B& b) {
  if constexpr (is_default_case<B>() && NonblockingCase<A>) {
    return select_nonblocking(a, 0, b, 1);
  } else if constexpr (is_default_case<A>() && NonblockingCase<B>) {
    return select_nonblocking(b, 1, a, 0);
  } else {
    SelectCase cases[] = {a.make(), b.make()};
    const std::size_t chosen = ::chanflow::select(std::span<SelectCase>(cases, 2));
    run_chosen(chosen, a, b);
    return chosen;
  }
}
}  // namespace detail

// A receive case: body(std::optional<T>) runs when chosen (std::nullopt: ch is closed). An lvalue
// ch is borrowed: the case refers to the channel, so build the case where it is used (in the
// select's argument list) — the channel must stay alive until the select returns. An rvalue ch
// (e.g. ctx.done()) is moved into the case.
template <class T, class F>
detail::RecvCase<T, std::decay_t<F>> on_recv(const Chan<T>& ch, F&& body) {
  return {Chan<T>(), ch.base(), std::forward<F>(body), std::nullopt};
}
template <class T, class F>
detail::RecvCase<T, std::decay_t<F>> on_recv(Chan<T>&& ch, F&& body) {
  detail::ChanBase* base = ch.base();
  return {std::move(ch), base, std::forward<F>(body), std::nullopt};
}
// A send case: sends value, then body() runs. ch is borrowed or moved in as for on_recv.
template <class T, class V, class F>
detail::SendCase<T, std::decay_t<F>> on_send(const Chan<T>& ch, V&& value, F&& body) {
  return {Chan<T>(), ch.base(), T(std::forward<V>(value)), std::forward<F>(body)};
}
template <class T, class V, class F>
detail::SendCase<T, std::decay_t<F>> on_send(Chan<T>&& ch, V&& value, F&& body) {
  detail::ChanBase* base = ch.base();
  return {std::move(ch), base, T(std::forward<V>(value)), std::forward<F>(body)};
}
// The default case: body() runs when no other case is ready.
template <class F>
detail::DefaultCase<std::decay_t<F>> on_default(F&& body) {
  return {std::forward<F>(body)};
}

// The variadic select (see the top of this file). Returns the index of the case that ran. Case
// objects passed as temporaries (the usual `select(on_recv(...), ...)`) are used in place; a case
// passed as an lvalue is copied first, so it can be used again.
template <class... Cases>
requires(detail::SelectCaseBuilder<std::decay_t<Cases>>&&...) std::size_t select(Cases&&... cases) {
  if constexpr ((std::is_lvalue_reference_v<Cases> || ...)) {
    std::tuple<std::decay_t<Cases>...> t(std::forward<Cases>(cases)...);
    return std::apply([](auto&... cs) { return detail::select_cases(cs...); }, t);
  } else {
    return detail::select_cases(cases...);
  }
}

}  // namespace chanflow
