// persistent_scope.cc — see persistent_scope.h.
#include "chanflow/exec/persistent_scope.h"

#include "chanflow/core/error.h"

namespace chanflow {

struct PersistentScope::State {
  mutable os::Mutex mu;
  std::map<std::string, Tensor, std::less<>> vars CHANFLOW_GUARDED_BY(mu);
  bool in_use CHANFLOW_GUARDED_BY(mu) = false;
};

PersistentScope::PersistentScope() : state_(std::make_shared<State>()) {}

std::optional<Tensor> PersistentScope::find(std::string_view name) const {
  os::LockGuard lock(state_->mu);
  auto it = state_->vars.find(name);
  if (it == state_->vars.end()) return std::nullopt;
  return it->second;
}

void PersistentScope::set(const std::string& name, Tensor value) {
  if (!value.defined())
    CHANFLOW_THROW(Error) << "PersistentScope::set('" << name << "'): null tensor";
  Tensor old;  // released outside the lock
  os::LockGuard lock(state_->mu);
  if (state_->in_use) {
    CHANFLOW_THROW(Error) << "PersistentScope::set('" << name << "'): a run uses the scope";
  }
  Tensor& slot = state_->vars[name];
  old = std::move(slot);
  slot = std::move(value);
}

bool PersistentScope::erase(std::string_view name) {
  Tensor old;
  os::LockGuard lock(state_->mu);
  if (state_->in_use) {
    CHANFLOW_THROW(Error) << "PersistentScope::erase('" << name << "'): a run uses the scope";
  }
  auto it = state_->vars.find(name);
  if (it == state_->vars.end()) return false;
  old = std::move(it->second);
  state_->vars.erase(it);
  return true;
}

std::vector<std::string> PersistentScope::names() const {
  os::LockGuard lock(state_->mu);
  std::vector<std::string> out;
  for (const auto& [name, t] : state_->vars) out.push_back(name);
  return out;
}

size_t PersistentScope::size() const {
  os::LockGuard lock(state_->mu);
  return state_->vars.size();
}

std::map<std::string, Tensor> PersistentScope::check_out(const std::vector<std::string>& names) {
  os::LockGuard lock(state_->mu);
  if (state_->in_use) {
    CHANFLOW_THROW(Error) << "Executor::run: the PersistentScope is in use by another run (a "
                             "scope serves one run at a time)";
  }
  state_->in_use = true;
  std::map<std::string, Tensor> out;
  for (const std::string& n : names) {
    auto it = state_->vars.find(n);
    if (it == state_->vars.end()) continue;
    out.emplace(n, std::move(it->second));
    state_->vars.erase(it);
  }
  return out;
}

void PersistentScope::check_in(std::map<std::string, Tensor> values) {
  std::vector<Tensor> old;
  os::LockGuard lock(state_->mu);
  for (auto& [name, t] : values) {
    if (!t.defined()) continue;
    Tensor& slot = state_->vars[name];
    old.push_back(std::move(slot));
    slot = std::move(t);
  }
  state_->in_use = false;
}

}  // namespace chanflow
