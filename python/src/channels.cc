// channels.cc — chanflow.Channel, make_chan, recv_case / send_case and select.
//
// A Python Channel is a handle to a runtime ChannelObj (the type-erased channel the executor's
// programs use), so Python threads, green threads and running programs share one channel. Values
// cross as chanflow objects: send converts with to_object (a NumPy array becomes a Tensor sharing
// its memory, an int an Int ...) and recv converts back with wrap_object, so a channel never holds
// a Python object, and its contents may be dropped on any thread.
//
// Blocking. Every blocking operation first tries the non-blocking form with the GIL held (the
// lock-free "not ready" check, then the operation): when a partner is waiting, or the buffer has
// room or a value, the call costs no GIL hand-off. Only when it would block is the GIL released.
// Then:
//   - on a thread other than the main one, without a timeout, outside a run: the plain blocking
//     operation;
//   - with a timeout, or on Python's main thread: a select over the operation and the done()
//     channel of a Context (with_deadline for the timeout), and on the main thread an
//     InterruptScope registers that context, so any signal with a Python-level handler (Ctrl-C,
//     SIGTERM, SIGALRM ...) cancels it: the call then runs Python's handlers, and an exception
//     from one (KeyboardInterrupt by default for Ctrl-C) leaves the call. When the handlers
//     return without raising, the operation is tried again with the remaining time (PEP 475's
//     rule for interrupted system calls). A passed timeout raises DeadlineExceededError (a
//     TimeoutError);
//   - inside a run (a machine's Python op calling this: RunScope, native.h), on any thread: the
//     select also waits on the run's done() channel, and once the run is canceled or past its
//     deadline the call raises the run's CanceledError / DeadlineExceededError, having performed
//     nothing. Without it a TapeMachine whose op waits on a channel could never stop: the run
//     waits for its op, and the op for a value (a GoMachine abandons the op, which then waited
//     on a callback thread for good).
// A thread blocked here is an OS thread parked in a chanflow call, so deadlock detection sees it:
// when nothing in the process can wake it, the call raises DeadlockError instead of hanging.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/map.h"
#include "chanflow/core/string.h"
#include "chanflow/exec/channels.h"
#include "chanflow/runtime/channel.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/external_waiter.h"
#include "chanflow/runtime/select.h"
#include "chanflow/tensor/dtype.h"
#include "native.h"

namespace chanflow::python {
namespace {

std::string type_name(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }
std::string repr_of(py::handle v) { return py::repr(v).cast<std::string>(); }

// ---- element types ----

// A channel of `capacity` carrying `elem` (a type key of chanflow/exec/channels.h, made there as
// the executor's channel_create makes its channels, so a channel made here binds to a program's
// channel variable of the same declaration).
Channel make_typed_channel(py::handle capacity_arg, py::handle elem_arg) {
  if (PyLong_Check(capacity_arg.ptr()) == 0 || PyBool_Check(capacity_arg.ptr()) != 0) {
    throw_type_error("make_chan: capacity must be an int, got '" + type_name(capacity_arg) + "'");
  }
  int overflow = 0;
  const long long capacity = PyLong_AsLongLongAndOverflow(capacity_arg.ptr(), &overflow);
  // A bound that a ring buffer can allocate: beyond it the buffer would be a bad_alloc.
  constexpr long long kMaxCapacity = 1LL << 32;
  if (overflow != 0 || capacity < 0 || capacity > kMaxCapacity) {
    throw py::value_error("make_chan: capacity must be between 0 and " +
                          std::to_string(kMaxCapacity) + ", got " + repr_of(capacity_arg));
  }
  const auto cap = static_cast<std::size_t>(capacity);
  if (elem_arg.is_none()) return Channel::make<Object>(cap);
  if (!PyUnicode_Check(elem_arg.ptr())) {
    throw_type_error("make_chan: elem must be a type key str (" +
                     std::string(channel_elem_choices()) + ") or None, got '" +
                     type_name(elem_arg) + "'");
  }
  try {
    return make_channel_of(elem_arg.cast<std::string>(), cap);
  } catch (const TypeError&) {
    throw py::value_error("make_chan: elem must be " + std::string(channel_elem_choices()) +
                          ", got " + repr_of(elem_arg));
  }
}

// make_typed_channel, named `name_arg` in traces (None: "#<id>"; a str otherwise). The name is
// set before the channel is returned, so before any other thread can see it.
Channel make_channel(py::handle capacity_arg, py::handle elem_arg, py::handle name_arg) {
  if (!name_arg.is_none() && !PyUnicode_Check(name_arg.ptr())) {
    throw_type_error("make_chan: name must be a str or None, got '" + type_name(name_arg) + "'");
  }
  Channel ch = make_typed_channel(capacity_arg, elem_arg);
  if (!name_arg.is_none()) {
    const_cast<ChannelObj*>(ch.get())->base()->set_name(name_arg.cast<std::string>());
  }
  return ch;
}

// The object behind a Python Channel (never null: a Python Channel always has one).
ChannelObj* obj(const Channel& ch) {
  if (!ch.defined()) throw py::value_error("Channel: the handle is null");
  return const_cast<ChannelObj*>(ch.get());
}

// ---- timeouts ----

// None -> no timeout; a number of seconds >= 0 otherwise. `what` names the call.
std::optional<Clock::time_point> deadline_of(py::handle timeout, const char* what) {
  if (timeout.is_none()) return std::nullopt;
  if ((PyFloat_Check(timeout.ptr()) == 0 && PyLong_Check(timeout.ptr()) == 0) ||
      PyBool_Check(timeout.ptr()) != 0) {
    throw_type_error(std::string(what) + ": timeout must be a number of seconds or None, got '" +
                     type_name(timeout) + "'");
  }
  const double seconds = timeout.cast<double>();
  if (std::isnan(seconds) || seconds < 0) {
    throw py::value_error(std::string(what) + ": timeout must be >= 0 seconds, got " +
                          repr_of(timeout));
  }
  if (seconds > 1e9) return std::nullopt;  // past what the clock holds: no deadline
  return Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(std::llround(seconds * 1e9)));
}

// ---- blocking ----

// The ident of Python's main thread (where SIGINT raises), read at import.
unsigned long g_main_thread = 0;

bool on_main_thread() { return PyThread_get_thread_ident() == g_main_thread; }

std::string seconds_text(Clock::duration d) {
  std::ostringstream os;
  os << std::chrono::duration<double>(d).count() << " s";
  return os.str();
}

// The context a blocking call on the main thread without a timeout waits on, for Ctrl-C to
// cancel: one, made again only after a SIGINT canceled it (a context and its done() channel are
// two allocations and frees a call otherwise). Main thread only, with the GIL held.
Context main_context() {
  static Context* ctx = nullptr;  // never destroyed: blocking calls may run during finalisation
  if (ctx == nullptr) ctx = new Context(with_cancel(background()));
  if (ctx->err()) *ctx = with_cancel(background());
  return *ctx;
}

// Performs one of cases[0, n) blocking, with the GIL released (held on entry and on return);
// cases[n, end) are replaced by the waits' own cases. See the top of this file for timeouts,
// signals and runs. Returns the index of the case performed. `what` names the call in errors.
std::size_t block_on(std::vector<SelectCase>& cases, std::size_t n,
                     std::optional<Clock::time_point> deadline, const char* what) {
  const bool main = on_main_thread();
  const Context* run = current_run();
  if (!deadline && !main && run == nullptr) {
    std::size_t chosen = 0;
    std::exception_ptr error;
    {
      ReleaseGil nogil;
      try {
        chosen = select(std::span<SelectCase>(cases.data(), n));
      } catch (...) {
        error = std::current_exception();
      }
    }
    release_pending_owners();
    if (error) std::rethrow_exception(error);
    return chosen;
  }
  const Clock::time_point start = Clock::now();
  for (;;) {
    // The call's own context (its deadline, the signals' cancel), and the run's (the nil channel,
    // never ready, outside a run).
    const Context ctx = deadline ? with_deadline(background(), *deadline)
                        : main   ? main_context()
                                 : background();
    Chan<Unit> done = ctx.done();
    Chan<Unit> run_done = run != nullptr ? run->done() : Chan<Unit>();
    std::optional<Unit> fired;
    cases.erase(cases.begin() + static_cast<std::ptrdiff_t>(n), cases.end());
    cases.push_back(SelectCase::recv(done, fired));
    cases.push_back(SelectCase::recv(run_done, fired));
    std::optional<InterruptScope> interrupt;
    // May raise a handler's exception (KeyboardInterrupt ...) for a signal just before.
    if (main) interrupt.emplace(ctx, InterruptScope::Mode::kRetry);
    std::size_t chosen = 0;
    std::exception_ptr error;
    {
      ReleaseGil nogil;
      try {
        chosen = select(std::span<SelectCase>(cases));
      } catch (...) {
        error = std::current_exception();
      }
    }
    release_pending_owners();
    // A wait ended by a context performed no case (select performs exactly one, here a
    // context's): Python's handlers run, and one that raises ends the call with nothing sent or
    // received. A performed operation is kept; its pending handlers run as the call returns.
    const bool interrupted = interrupt && interrupt->finish(!error && chosen < n);
    if (error) std::rethrow_exception(error);
    if (chosen < n) return chosen;
    // The run this call belongs to is over (canceled, past its deadline): its error, which the
    // Python op that called this raises on, and the machine counts as the run's end.
    if (run != nullptr) {
      if (std::exception_ptr e = run->err()) std::rethrow_exception(e);
    }
    if (interrupted) continue;  // the handlers returned: try again, with the time left
    throw DeadlineExceededError(std::string(what) + ": timed out after " +
                                seconds_text(Clock::now() - start));
  }
}

// ---- Channel methods ----

void send(const Channel& ch, py::handle value, py::handle timeout) {
  ChannelObj* c = obj(ch);
  ObjectRef v = to_object(value, "Channel.send: value");
  c->check_elem(v);
  const auto deadline = deadline_of(timeout, "Channel.send");
  if (detail::send_may_proceed(c->base()) && detail::chan_try_send(c->base(), &v)) return;
  std::vector<SelectCase> cases{{SelectCase::Kind::kSend, c->base(), &v},
                                SelectCase::default_case()};
  block_on(cases, 1, deadline, "Channel.send");
}

// (value, ok): ok is False (value None) once the channel is closed and drained.
py::tuple recv(const Channel& ch, py::handle timeout) {
  ChannelObj* c = obj(ch);
  const auto deadline = deadline_of(timeout, "Channel.recv");
  std::optional<ObjectRef> out;
  if (!detail::recv_may_proceed(c->base()) || detail::chan_try_recv(c->base(), &out) == 0) {
    std::vector<SelectCase> cases{{SelectCase::Kind::kRecv, c->base(), &out},
                                  SelectCase::default_case()};
    block_on(cases, 1, deadline, "Channel.recv");
  }
  if (!out) return py::make_tuple(py::none(), false);
  return py::make_tuple(wrap_object(std::move(*out)), true);
}

bool try_send(const Channel& ch, py::handle value) {
  ChannelObj* c = obj(ch);
  ObjectRef v = to_object(value, "Channel.try_send: value");
  c->check_elem(v);
  return detail::send_may_proceed(c->base()) && detail::chan_try_send(c->base(), &v);
}

py::tuple try_recv(const Channel& ch) {
  ChannelObj* c = obj(ch);
  std::optional<ObjectRef> out;
  if (detail::recv_may_proceed(c->base())) detail::chan_try_recv(c->base(), &out);
  if (!out) return py::make_tuple(py::none(), false);
  return py::make_tuple(wrap_object(std::move(*out)), true);
}

py::object next_value(const Channel& ch) {
  py::tuple r = recv(ch, py::none());
  if (!r[1].cast<bool>()) throw py::stop_iteration();
  return r[0];
}

std::string channel_repr(const Channel& ch) {
  if (!ch.defined()) return "<chanflow.Channel null>";
  std::ostringstream os;
  os << "<chanflow.Channel of " << ch->elem_type() << ", " << ch->size() << "/" << ch->capacity()
     << " buffered" << (ch->closed() ? ", closed" : "") << " at "
     << static_cast<const void*>(ch.get()) << ">";
  return os.str();
}

// ---- select ----

// One case of select(): a receive from, or a send of `value` on, a channel (null: the nil
// channel, never ready). Immutable, so a list of cases may be reused by many selects.
struct PySelectCase {
  Channel ch;
  bool is_send = false;
  ObjectRef value;  // the send's value, converted (and type-checked) when the case is made
};

PySelectCase make_recv_case(py::handle ch) {
  if (ch.is_none()) return PySelectCase{Channel(), false, ObjectRef()};
  if (!py::isinstance<Channel>(ch)) {
    throw_type_error("recv_case: channel must be a chanflow.Channel or None, got '" +
                     type_name(ch) + "'");
  }
  return PySelectCase{ch.cast<Channel>(), false, ObjectRef()};
}

PySelectCase make_send_case(py::handle ch, py::handle value) {
  if (!ch.is_none() && !py::isinstance<Channel>(ch)) {
    throw_type_error("send_case: channel must be a chanflow.Channel or None, got '" +
                     type_name(ch) + "'");
  }
  PySelectCase c{ch.is_none() ? Channel() : ch.cast<Channel>(), true,
                 to_object(value, "send_case: value")};
  if (c.ch.defined()) c.ch->check_elem(c.value);
  return c;
}

std::string case_repr(const PySelectCase& c) {
  std::string ch = c.ch.defined() ? channel_repr(c.ch) : "None";
  if (!c.is_send) return "recv_case(" + ch + ")";
  return "send_case(" + ch + ", " + repr_of(wrap_object(c.value)) + ")";
}

// (index, value, ok); see bind_channels for the contract.
py::tuple select_py(py::handle cases_arg, bool has_default, py::handle timeout) {
  if (PyList_Check(cases_arg.ptr()) == 0 && PyTuple_Check(cases_arg.ptr()) == 0) {
    throw_type_error("select: cases must be a list of recv_case()/send_case(), got '" +
                     type_name(cases_arg) + "'");
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(cases_arg);
  const std::size_t n = seq.size();
  // Handles kept here so that the channels outlive the select even if the Python list changes.
  std::vector<Channel> chans(n);
  std::vector<ObjectRef> values(n);
  std::vector<std::optional<ObjectRef>> outs(n);
  std::vector<SelectCase> cases;
  cases.reserve(n + 2);  // and the two cases of block_on
  for (std::size_t i = 0; i < n; ++i) {
    py::object item = seq[i];
    if (!py::isinstance<PySelectCase>(item)) {
      throw_type_error("select: cases[" + std::to_string(i) +
                       "] must be a recv_case() or send_case(), got '" + type_name(item) + "'");
    }
    const auto& c = item.cast<const PySelectCase&>();
    chans[i] = c.ch;
    detail::ChanBase* base = chans[i].base();
    if (c.is_send) {
      values[i] = c.value;  // copied: the case keeps its value for the next select
      cases.emplace_back(SelectCase::Kind::kSend, base, &values[i]);
    } else {
      cases.emplace_back(SelectCase::Kind::kRecv, base, &outs[i]);
    }
  }
  const auto deadline = deadline_of(timeout, "select");
  if (n == 0 && !has_default) {
    throw py::value_error("select: no cases and no default: it would block forever");
  }
  // First without blocking (with the GIL held): a default case at the end.
  cases.push_back(SelectCase::default_case());
  std::size_t chosen = select(std::span<SelectCase>(cases));
  if (chosen == n) {
    if (has_default) return py::make_tuple(py::none(), py::none(), false);
    chosen = block_on(cases, n, deadline, "select");
  }
  if (cases[chosen].kind() == SelectCase::Kind::kSend) {
    return py::make_tuple(chosen, py::none(), true);
  }
  std::optional<ObjectRef>& out = outs[chosen];
  if (!out) return py::make_tuple(chosen, py::none(), false);
  return py::make_tuple(chosen, wrap_object(std::move(*out)), true);
}

}  // namespace

void bind_channels(py::module_& m) {
  py::module_ threading = py::module_::import("threading");
  py::object main_thread = threading.attr("main_thread")();
  g_main_thread = main_thread.attr("ident").cast<unsigned long>();
  // The runtime took every thread alive when the module was loaded for a helper that never wakes
  // a waiter; the script's own threads started before `import chanflow` may well send on a
  // channel a blocked thread waits on (else that thread's receive would be a false deadlock).
  long others = 0;
  for (py::handle t : threading.attr("enumerate")()) {
    if (!t.is(main_thread)) ++others;
  }
  count_preexisting_threads_as_plain(others);

  py::class_<Channel, ObjectRef>(
      m, "Channel",
      "Go's channel, shared by Python threads, green threads and running programs. Made by "
      "make_chan(); carries chanflow objects (tensors, numbers, strings, arrays, channels ...): "
      "send converts a Python value as chanflow.Executor's feeds do (a NumPy array becomes a "
      "Tensor sharing its memory: do not modify it after sending), recv returns it as a Python "
      "value. Blocking calls release the GIL; on the main thread Ctrl-C interrupts them.")
      .def(py::init([](py::handle capacity, py::handle elem, py::handle name) {
             return make_channel(capacity, elem, name);
           }),
           py::arg("capacity") = 0, py::arg("elem") = py::none(), py::arg("name") = py::none(),
           "Channel(capacity=0, elem=None, name=None): the same as make_chan(capacity, elem, "
           "name).")
      .def("send", &send, py::arg("value"), py::arg("timeout") = py::none(),
           "Sends `value`: blocks until a receiver takes it (capacity 0) or the buffer has room. "
           "Raises ChannelClosedError if the channel is (or gets) closed, chanflow.TypeError if "
           "the value is not of the channel's element type, DeadlineExceededError (a "
           "TimeoutError) when `timeout` seconds pass first.")
      .def("recv", &recv, py::arg("timeout") = py::none(),
           "Receives: (value, True), or (None, False) once the channel is closed and its buffer "
           "drained. Blocks until one of these; DeadlineExceededError when `timeout` seconds pass "
           "first.")
      .def("try_send", &try_send, py::arg("value"),
           "Sends without blocking: True if a receiver or the buffer took the value, False "
           "otherwise. Raises ChannelClosedError on a closed channel.")
      .def("try_recv", &try_recv,
           "Receives without blocking: (value, True) if one was ready, else (None, False) -- "
           "nothing ready, or closed and drained (`closed` tells which).")
      .def(
          "close", [](const Channel& ch) { obj(ch)->close(); },
          "Closes the channel: receivers drain the buffer, then get (None, False); blocked and "
          "later senders raise ChannelClosedError. Raises ChannelClosedError when already "
          "closed.")
      .def(
          "__len__", [](const Channel& ch) { return obj(ch)->size(); },
          "The number of buffered values (a snapshot).")
      .def_property_readonly(
          "capacity", [](const Channel& ch) { return obj(ch)->capacity(); },
          "The buffer's capacity (0: unbuffered).")
      .def_property_readonly(
          "closed", [](const Channel& ch) { return obj(ch)->closed(); },
          "Whether close() has happened.")
      .def_property_readonly(
          "elem", [](const Channel& ch) { return obj(ch)->elem_type(); },
          "The element type key: what send accepts ('Object': anything).")
      .def_property_readonly(
          "name", [](const Channel& ch) { return obj(ch)->base()->name(); },
          "The name traces show for it ('': none, traces show '#<id>').")
      .def(
          "__iter__", [](py::object self) { return self; },
          "The channel itself: iterating receives until it is closed and drained.")
      .def("__next__", &next_value,
           "Receives the next value; StopIteration once closed and drained.")
      .def("__eq__",
           [](const Channel& a, py::handle b) {
             return py::isinstance<Channel>(b) && a.same_as(b.cast<const Channel&>());
           })
      .def("__hash__", [](const Channel& ch) { return std::hash<const void*>()(ch.get()); })
      .def("__repr__", &channel_repr);
  register_wrapper(
      ChannelObj::runtime_type_index(),
      [](ObjectRef r) { return py::cast(downcast<Channel>(std::move(r))); }, m.attr("Channel"));

  // pybind11 keeps the pointer: the text must live as long as the module.
  static const std::string make_chan_doc =
      "A new channel with room for `capacity` buffered values (0: unbuffered, a rendezvous). "
      "`elem` restricts what it carries, by type key: " +
      std::string(channel_elem_choices()) +
      "; None is 'Object'. A program's channel variable declared with an element type binds "
      "to a channel of 'Tensor' or of that dtype ('Tensor(float32)'). `name` is what traces "
      "(chanflow.trace_start) call it: where green threads wait on it, what woke them, its "
      "buffer's length (None: '#<id>').";
  m.def("make_chan", &make_channel, py::arg("capacity") = 0, py::arg("elem") = py::none(),
        py::arg("name") = py::none(), make_chan_doc.c_str());

  py::class_<PySelectCase>(m, "SelectCase",
                           "One case of select(): made by recv_case() or send_case(); may be "
                           "reused by any number of selects.")
      .def_property_readonly(
          "channel",
          [](const PySelectCase& c) { return c.ch.defined() ? py::cast(c.ch) : py::none(); },
          "The channel (None: the nil channel, never ready).")
      .def_property_readonly(
          "kind", [](const PySelectCase& c) { return c.is_send ? "send" : "recv"; },
          "'send' or 'recv'.")
      .def_property_readonly(
          "value",
          [](const PySelectCase& c) { return c.is_send ? wrap_object(c.value) : py::none(); },
          "The value a send case sends (None for a recv case).")
      .def("__repr__", &case_repr);

  m.def("recv_case", &make_recv_case, py::arg("channel"),
        "A select case receiving from `channel` (None: the nil channel, never ready -- Go's way "
        "to switch a case off).");
  m.def("send_case", &make_send_case, py::arg("channel"), py::arg("value"),
        "A select case sending `value` on `channel` (None: never ready). The value is converted "
        "and checked against the channel's element type now.");
  m.def("select", &select_py, py::arg("cases"), py::arg("default") = false,
        py::arg("timeout") = py::none(),
        "Go's select: performs exactly one of `cases` (recv_case / send_case) and returns "
        "(index, value, ok). Among ready cases one is chosen uniformly at random; a closed "
        "channel is ready for receiving. A receive gives (i, value, True), or (i, None, False) "
        "when its channel is closed and drained; a send gives (i, None, True) and raises "
        "ChannelClosedError if its channel is closed. With default=True it never blocks and "
        "returns (None, None, False) when no case is ready; otherwise it blocks (GIL released; "
        "Ctrl-C interrupts it on the main thread) and raises DeadlineExceededError when "
        "`timeout` seconds pass first.");
}

}  // namespace chanflow::python
