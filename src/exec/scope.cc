// scope.cc — Scope: slots, name lookup for feeds and fetches.
#include "chanflow/exec/scope.h"

#include <utility>

#include "chanflow/core/error.h"

namespace chanflow {

ScopeObj::ScopeObj(ObjectPtr<ScopeObj> parent,
                   std::shared_ptr<const std::vector<std::string>> names)
    : parent_(std::move(parent)), names_(std::move(names)), slots_(names_->size()) {}

Scope Scope::make(const Scope& parent, std::vector<std::string> names) {
  return make(parent, std::make_shared<const std::vector<std::string>>(std::move(names)));
}

Scope Scope::make(const Scope& parent, std::shared_ptr<const std::vector<std::string>> names) {
  ObjectPtr<ScopeObj> p;
  if (parent.defined()) p = detail::ObjectUnsafe::adopt<ScopeObj>(parent.get());
  return Scope(make_object<ScopeObj>(std::move(p), std::move(names)));
}

std::optional<ObjectRef> Scope::find(std::string_view name) const {
  for (const ScopeObj* s = get(); s != nullptr; s = s->parent()) {
    const std::vector<std::string>& n = s->names();
    for (size_t i = 0; i < n.size(); ++i) {
      if (n[i] == name) return s->get(static_cast<int32_t>(i));
    }
  }
  return std::nullopt;
}

void Scope::set(std::string_view name, ObjectRef v) const {
  for (ScopeObj* s = get(); s != nullptr; s = s->parent()) {
    const std::vector<std::string>& n = s->names();
    for (size_t i = 0; i < n.size(); ++i) {
      if (n[i] == name) {
        s->set(static_cast<int32_t>(i), std::move(v));
        return;
      }
    }
  }
  CHANFLOW_THROW(Error) << "scope: no variable named '" << name << "'";
}

Scope Scope::parent() const {
  ScopeObj* p = get()->parent();
  return p == nullptr ? Scope() : Scope(detail::ObjectUnsafe::adopt<Object>(p));
}

}  // namespace chanflow
