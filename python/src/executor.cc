// executor.cc — chanflow.Executor: runs a Program with feeds and fetches, the GIL released.
//
// The C++ executor caches the prepared program per Program object; a Python Program wraps one
// cf::Program, so running the same Python object again reuses the preparation.
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "chanflow/exec/executor.h"
#include "chanflow/exec/persistent_scope.h"
#include "chanflow/exec/scope.h"
#include "chanflow/ops/backward.h"
#include "chanflow/runtime/channel.h"
#include "native.h"

namespace chanflow::python {
namespace {

// Owns the C++ executor. Destroyed with the GIL released: its scheduler joins worker threads,
// which never wait for the GIL but may still be finishing green threads.
class PyExecutor {
 public:
  explicit PyExecutor(ExecutorOptions options) : ex_(std::make_unique<Executor>(options)) {}
  ~PyExecutor() {
    if (PyGILState_Check() != 0) {
      ReleaseGil nogil;
      ex_.reset();
    }
  }
  Executor& get() { return *ex_; }

 private:
  std::unique_ptr<Executor> ex_;
};

std::string type_name(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }

std::map<std::string, Tensor> convert_feed(py::handle feed) {
  std::map<std::string, Tensor> out;
  if (feed.is_none()) return out;
  if (!PyDict_Check(feed.ptr())) {
    throw_type_error("Executor.run: feed must be a dict of variable name -> array, got '" +
                     type_name(feed) + "'");
  }
  for (auto item : py::reinterpret_borrow<py::dict>(feed)) {
    if (!PyUnicode_Check(item.first.ptr())) {
      throw_type_error("Executor.run: feed keys must be str variable names, got '" +
                       type_name(item.first) + "' " + py::repr(item.first).cast<std::string>());
    }
    const std::string name = item.first.cast<std::string>();
    try {
      out[name] = to_tensor(item.second, py::none());
    } catch (const TypeError& e) {
      throw TypeError("Executor.run: feed '" + name + "': " + e.what());
    }
  }
  return out;
}

std::vector<std::string> convert_fetch(py::handle fetch) {
  std::vector<std::string> out;
  if (fetch.is_none()) return out;
  if (PyList_Check(fetch.ptr()) == 0 && PyTuple_Check(fetch.ptr()) == 0) {
    throw_type_error("Executor.run: fetch must be a list of variable names, got '" +
                     type_name(fetch) + "'");
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(fetch);
  for (size_t i = 0; i < seq.size(); ++i) {
    py::object name = seq[i];
    if (!PyUnicode_Check(name.ptr())) {
      throw_type_error("Executor.run: fetch[" + std::to_string(i) +
                       "] must be a str variable name, got '" + type_name(name) + "'");
    }
    out.push_back(name.cast<std::string>());
  }
  return out;
}

std::map<std::string, Channel> convert_channels(py::handle channels) {
  std::map<std::string, Channel> out;
  if (channels.is_none()) return out;
  if (!PyDict_Check(channels.ptr())) {
    throw_type_error(
        "Executor.run: channels must be a dict of variable name -> "
        "chanflow.Channel, got '" +
        type_name(channels) + "'");
  }
  for (auto item : py::reinterpret_borrow<py::dict>(channels)) {
    if (!PyUnicode_Check(item.first.ptr())) {
      throw_type_error("Executor.run: channels keys must be str variable names, got '" +
                       type_name(item.first) + "' " + py::repr(item.first).cast<std::string>());
    }
    const std::string name = item.first.cast<std::string>();
    if (!py::isinstance<Channel>(item.second)) {
      throw_type_error("Executor.run: channels['" + name +
                       "'] must be a chanflow.Channel (made by make_chan), got '" +
                       type_name(item.second) + "'");
    }
    out[name] = item.second.cast<Channel>();
  }
  return out;
}

// The fetched variables of a finished run, in fetch order: the C++ Executor::run's checks, with a
// channel variable fetchable too (that run returns tensors only). Needs no GIL.
std::vector<ObjectRef> fetch_refs(const Scope& root, const std::vector<std::string>& fetches) {
  std::vector<ObjectRef> out;
  out.reserve(fetches.size());
  for (const std::string& name : fetches) {
    std::optional<ObjectRef> v = root.find(name);
    if (!v) throw NotFoundError("fetch '" + name + "': block 0 declares no such variable");
    if (!v->defined()) throw Error("fetch '" + name + "': the program never wrote the variable");
    if (!(*v)->is_instance<TensorObj>() && !(*v)->is_instance<ChannelObj>()) {
      throw TypeError("fetch '" + name + "': the variable holds a " +
                      std::string((*v)->type_key()) + ", not a tensor or a channel");
    }
    out.push_back(std::move(*v));
  }
  return out;
}

// The context of a run: a child of the run whose Python op calls it, if any (run_parent).
Context run_context(py::handle timeout) {
  if (timeout.is_none()) return with_cancel(run_parent());
  if (PyFloat_Check(timeout.ptr()) == 0 && PyLong_Check(timeout.ptr()) == 0) {
    throw_type_error("Executor.run: timeout must be a number of seconds or None, got '" +
                     type_name(timeout) + "'");
  }
  const double seconds = timeout.cast<double>();
  if (std::isnan(seconds) || seconds < 0) {
    throw py::value_error("Executor.run: timeout must be >= 0 seconds, got " +
                          py::repr(timeout).cast<std::string>());
  }
  // Past what the clock can hold: no deadline (with_timeout does the same for huge durations).
  if (seconds > 1e9) return with_cancel(run_parent());
  return with_timeout(run_parent(),
                      std::chrono::nanoseconds(static_cast<int64_t>(std::llround(seconds * 1e9))));
}

// chanflow.PersistentScope: a shared handle (copies of the Python object share the scope).
struct PyPersistentScope {
  PersistentScope scope;
};

py::list run(PyExecutor& self, py::handle program, py::handle feed, py::handle fetch,
             py::handle channels, py::handle timeout, py::handle scope) {
  PersistentScope* persistent = nullptr;
  if (!scope.is_none()) {
    if (!py::isinstance<PyPersistentScope>(scope)) {
      throw_type_error("Executor.run: scope must be a chanflow.PersistentScope or None, got '" +
                       type_name(scope) + "'");
    }
    persistent = &scope.cast<PyPersistentScope&>().scope;
  }
  if (!py::isinstance<Program>(program)) {
    throw_type_error("Executor.run: program must be a chanflow.Program, got '" +
                     type_name(program) + "'");
  }
  const Program& p = program.cast<const Program&>();
  std::map<std::string, Tensor> feeds = convert_feed(feed);
  const std::vector<std::string> fetches = convert_fetch(fetch);
  const std::map<std::string, Channel> chans = convert_channels(channels);
  const Context ctx = run_context(timeout);

  std::vector<ObjectRef> fetched;
  run_interruptibly(ctx, [&] {
    // The run's other variables (tensors it made, channels and what they still buffer) are
    // dropped here too, without the GIL; so are the feeds (imported arrays are released later).
    try {
      fetched =
          fetch_refs(persistent != nullptr ? self.get().run_scope(ctx, p, *persistent, feeds, chans)
                                           : self.get().run_scope(ctx, p, feeds, chans),
                     fetches);
    } catch (...) {
      feeds.clear();
      throw;
    }
    feeds.clear();
  });
  py::list result;
  for (ObjectRef& v : fetched) result.append(wrap_object(std::move(v)));
  return result;
}

}  // namespace

void bind_executor(py::module_& m) {
  py::class_<PyExecutor>(m, "Executor",
                         "Runs programs. workers > 0 gives the executor its own scheduler with "
                         "that many worker threads; 0 uses the process's shared scheduler.")
      .def(py::init([](int64_t workers, int64_t max_threads, int64_t max_memory) {
             if (workers < 0 || workers > std::numeric_limits<int>::max()) {
               throw py::value_error("Executor: workers must be >= 0, got " +
                                     std::to_string(workers));
             }
             ExecutorOptions o;
             o.workers = static_cast<int>(workers);
             o.max_threads = max_threads;
             o.max_memory_bytes = max_memory;
             return std::make_unique<PyExecutor>(o);
           }),
           py::arg("workers") = 0, py::arg("max_threads") = 1'000'000, py::arg("max_memory") = -1)
      .def("run", &run, py::arg("program"), py::arg("feed") = py::none(),
           py::arg("fetch") = py::none(), py::arg("channels") = py::none(),
           py::arg("timeout") = py::none(), py::arg("scope") = py::none(),
           "Runs block 0 of `program` and returns the fetched variables, in fetch order: Tensors, "
           "and Channels for channel variables. `channels` binds block 0 channel variables "
           "(name -> Channel) to channels the caller holds, so Python threads exchange values "
           "with the running program. Blocks (GIL released) until the program and all its green "
           "threads ended. "
           "Ctrl-C on the main thread stops it (KeyboardInterrupt); other signals' Python "
           "handlers run while it runs (one that raises stops it with its exception); "
           "`timeout` seconds stop it with DeadlineExceededError. With `scope` (a "
           "PersistentScope) the program's persistable variables start as the scope holds them "
           "and go back to it when the run ends.");

  py::class_<PyPersistentScope>(
      m, "PersistentScope",
      "The variables that outlive a run (parameters, optimiser state): Paddle's global scope. "
      "Give it to Executor.run(scope=...). A scope serves one run at a time.")
      .def(py::init<>())
      .def(
          "find",
          [](const PyPersistentScope& s, const std::string& name) -> py::object {
            std::optional<Tensor> t = s.scope.find(name);
            if (!t) return py::none();
            return wrap_object(*t);
          },
          py::arg("name"), "The tensor of `name`, or None.")
      .def(
          "set",
          [](PyPersistentScope& s, const std::string& name, py::handle value) {
            s.scope.set(name, to_tensor(value, py::none()));
          },
          py::arg("name"), py::arg("value"), "Sets `name` to a tensor (an array is copied in).")
      .def(
          "erase",
          [](PyPersistentScope& s, const std::string& name) { return s.scope.erase(name); },
          py::arg("name"))
      .def("names",
           [](const PyPersistentScope& s) {
             py::list out;
             for (const std::string& n : s.scope.names()) out.append(py::str(n));
             return out;
           })
      .def("__len__", [](const PyPersistentScope& s) { return s.scope.size(); })
      .def(
          "__contains__",
          [](const PyPersistentScope& s, const std::string& name) {
            return s.scope.find(name).has_value();
          },
          py::arg("name"));

  m.def(
      "append_backward",
      [](const Program& program, const std::string& loss, py::handle parameter_list,
         py::handle no_grad_set) {
        std::vector<std::string> params;
        if (!parameter_list.is_none()) {
          for (auto v : py::iter(parameter_list)) params.push_back(v.cast<std::string>());
        }
        std::set<std::string> no_grad;
        if (!no_grad_set.is_none()) {
          for (auto v : py::iter(no_grad_set)) no_grad.insert(v.cast<std::string>());
        }
        BackwardResult r = append_backward(program, loss, params, no_grad);
        py::list pairs;
        for (const auto& [p, g] : r.params_and_grads) pairs.append(py::make_tuple(p, g));
        return py::make_tuple(r.program, pairs);
      },
      py::arg("program"), py::arg("loss"), py::arg("parameter_list") = py::none(),
      py::arg("no_grad_set") = py::none(),
      "append_backward(program, loss, parameter_list=None, no_grad_set=None) -> (Program, "
      "[(param, grad)])\n\nThe program with the gradient ops of `loss` appended to block 0 "
      "(Paddle's naming: x@GRAD), by the op table's gradient rules, and the (parameter, "
      "gradient variable) pairs. parameter_list None: every persistable float variable.");
}

}  // namespace chanflow::python
