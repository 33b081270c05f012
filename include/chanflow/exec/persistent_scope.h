// persistent_scope.h — PersistentScope, the variables that outlive a run: parameters and
// optimiser state (Paddle's global scope).
//
// A run given a PersistentScope (Executor::run(ctx, program, scope, ...)) starts with every
// persistable variable of block 0 that the scope holds set to the scope's tensor, and ends — also
// when it fails or is canceled — by storing every persistable block 0 variable back into the
// scope. The tensors are moved, not copied, in both directions: while the run holds a parameter,
// nothing else does, so an optimiser op updates it in place.
//
//   cf::PersistentScope scope;
//   ex.run(startup, scope);                          // initialises the parameters
//   for (...) ex.run(ctx, main, scope, feed, {"loss"});
//   cf::Tensor w = *scope.find("fc_0.w_0");
//
// A tensor read with find() or fetched from a run is shared with the scope: the next run that
// updates it in place copies it first (copy on write), once. Thread-safety: every member is
// thread-safe; a scope serves one run at a time (a second run given the same scope while one
// runs throws Error instead of waiting). Copies of the handle share the scope.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/core/locks.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

class CHANFLOW_API PersistentScope {
 public:
  PersistentScope();

  // The tensor of `name`, or nullopt.
  std::optional<Tensor> find(std::string_view name) const;
  // Sets (or replaces) `name`. Throws Error for an undefined tensor, or while a run uses the
  // scope.
  void set(const std::string& name, Tensor value);
  // Removes `name`; returns whether it existed. Throws Error while a run uses the scope.
  bool erase(std::string_view name);
  // Every variable's name, sorted.
  std::vector<std::string> names() const;
  size_t size() const;

  // The executor's side (Executor::run): takes the tensors of `names` out of the scope for a
  // run (marking the scope in use; Error when another run uses it), and puts a run's results
  // back (ending the use). Missing names are skipped.
  std::map<std::string, Tensor> check_out(const std::vector<std::string>& names);
  void check_in(std::map<std::string, Tensor> values);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace chanflow
