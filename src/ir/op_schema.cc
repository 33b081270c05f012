// OpSchema and OpSchemaRegistry.
#include "chanflow/ir/op_schema.h"

#include <algorithm>
#include <set>
#include <vector>

#include "chanflow/core/error.h"
#include "ir_internal.h"

namespace chanflow {

OpSchema::OpSchema(const OpSchema& other)
    : type_(other.type_),
      doc_(other.doc_),
      inputs_(other.inputs_),
      outputs_(other.outputs_),
      attrs_(other.attrs_),
      kernel_location_(other.kernel_location_),
      id_(other.id_),
      extension_(other.extension()) {}

OpSchema& OpSchema::operator=(const OpSchema& other) {
  if (this != &other) {
    type_ = other.type_;
    doc_ = other.doc_;
    inputs_ = other.inputs_;
    outputs_ = other.outputs_;
    attrs_ = other.attrs_;
    kernel_location_ = other.kernel_location_;
    id_ = other.id_;
    set_extension(other.extension());
  }
  return *this;
}

OpSchema& OpSchema::doc(std::string text) {
  doc_ = std::move(text);
  return *this;
}

OpSchema& OpSchema::input(std::string name, bool required, bool duplicable, std::string doc) {
  inputs_.push_back(ArgSpec{std::move(name), required, duplicable, std::move(doc)});
  return *this;
}

OpSchema& OpSchema::output(std::string name, bool required, bool duplicable, std::string doc) {
  outputs_.push_back(ArgSpec{std::move(name), required, duplicable, std::move(doc)});
  return *this;
}

OpSchema& OpSchema::attr(std::string name, AttrType type, std::function<Attr()> make_default,
                         std::string doc, std::function<std::string(const Attr&)> check) {
  attrs_.push_back(
      AttrSpec{std::move(name), type, std::move(make_default), std::move(check), std::move(doc)});
  return *this;
}

OpSchema& OpSchema::kernel_elsewhere(std::string where) {
  kernel_location_ = std::move(where);
  return *this;
}

const ArgSpec* OpSchema::input(std::string_view name) const noexcept {
  for (const ArgSpec& a : inputs_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ArgSpec* OpSchema::output(std::string_view name) const noexcept {
  for (const ArgSpec& a : outputs_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const AttrSpec* OpSchema::attr(std::string_view name) const noexcept {
  for (const AttrSpec& a : attrs_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const AttrSpec* framework_attr(std::string_view name, AttrType type) noexcept {
  // Built once (C++ guarantees a thread-safe initialisation); never modified afterwards.
  static const std::vector<AttrSpec> kFramework = [] {
    std::vector<AttrSpec> v;
    auto add = [&v](const char* n, AttrType t, const char* doc) {
      AttrSpec a;
      a.name = n;
      a.type = t;
      a.doc = doc;
      v.push_back(std::move(a));
    };
    add("op_role", AttrType::kInt, "Paddle's forward/backward/optimize role of the op");
    add("op_role_var", AttrType::kStrings, "Paddle's parameter/gradient pairs of the op");
    // The first Fluid version with op_role_var declared it a string.
    add("op_role_var", AttrType::kString, "Paddle's parameter/gradient pairs of the op");
    add("op_namescope", AttrType::kString, "Paddle's name scope of the op");
    add("op_callstack", AttrType::kStrings, "the Python stack that created the op");
    add("op_device", AttrType::kString, "Paddle's device placement of the op");
    // Kernel-selection hints Fluid's 2018 op protos carried (MKL-DNN and its data layouts).
    add("use_mkldnn", AttrType::kBoolean, "Paddle's choice of an MKL-DNN kernel");
    add("x_data_format", AttrType::kString, "Paddle's MKL-DNN layout of X");
    add("y_data_format", AttrType::kString, "Paddle's MKL-DNN layout of Y");
    return v;
  }();
  const AttrSpec* first = nullptr;
  for (const AttrSpec& a : kFramework) {
    if (a.name != name) continue;
    if (a.type == type) return &a;
    if (first == nullptr) first = &a;
  }
  return first;
}

std::vector<std::string> OpSchema::block_attrs() const {
  std::vector<std::string> out;
  for (const AttrSpec& a : attrs_) {
    if (a.type == AttrType::kBlock) out.push_back(a.name);
  }
  return out;
}

void OpSchema::set_extension(std::shared_ptr<const OpExtension> extension) const {
  os::LockGuard lock(extension_mutex_);
  extension_ = std::move(extension);
}

std::shared_ptr<const OpExtension> OpSchema::extension() const {
  os::LockGuard lock(extension_mutex_);
  return extension_;
}

namespace {

using Provider = void (*)(OpSchemaRegistry&);

// The providers of add_builtin_op_provider, and the global registry once it exists. Function-local
// statics: providers are added while other libraries' static objects are constructed, in an order
// no file controls.
struct Providers {
  os::Mutex mu;
  std::vector<Provider> list CHANFLOW_GUARDED_BY(mu);
  OpSchemaRegistry* global CHANFLOW_GUARDED_BY(mu) = nullptr;
};
Providers& providers() {
  static auto* p = new Providers();  // never destroyed: used during exit
  return *p;
}

}  // namespace

void add_builtin_op_provider(void (*provider)(OpSchemaRegistry& registry)) {
  Providers& p = providers();
  os::LockGuard lock(p.mu);
  if (std::find(p.list.begin(), p.list.end(), provider) != p.list.end()) return;
  p.list.push_back(provider);
  if (p.global != nullptr) provider(*p.global);
}

void register_builtin_ops(OpSchemaRegistry& registry) {
  ir_detail::register_ir_ops(registry);
  Providers& p = providers();
  os::LockGuard lock(p.mu);
  for (Provider f : p.list) f(registry);
}

OpSchemaRegistry& OpSchemaRegistry::global() {
  static OpSchemaRegistry* registry = [] {
    auto* r = new OpSchemaRegistry();  // never destroyed: ops may be looked up during exit
    ir_detail::register_ir_ops(*r);
    Providers& p = providers();
    // One critical section from the providers' pass to publishing `global`: a provider added
    // meanwhile is applied either here or by add_builtin_op_provider, never both or neither.
    os::LockGuard lock(p.mu);
    for (Provider f : p.list) f(*r);
    p.global = r;
    return r;
  }();
  return *registry;
}

std::unique_ptr<OpSchemaRegistry> OpSchemaRegistry::with_builtin_ops() {
  auto r = std::make_unique<OpSchemaRegistry>();
  register_builtin_ops(*r);
  return r;
}

const OpSchema& OpSchemaRegistry::add(const OpSchema& schema) {
  if (schema.type().empty()) CHANFLOW_THROW(Error) << "OpSchemaRegistry: empty op type";
  std::set<std::string> names;
  for (const auto* list : {&schema.inputs(), &schema.outputs()}) {
    names.clear();
    for (const ArgSpec& a : *list) {
      if (a.name.empty() || !names.insert(a.name).second) {
        CHANFLOW_THROW(Error) << "OpSchemaRegistry: op '" << schema.type()
                              << "' declares parameter '" << a.name << "' twice or empty";
      }
    }
  }
  names.clear();
  for (const AttrSpec& a : schema.attrs()) {
    if (a.name.empty() || !names.insert(a.name).second) {
      CHANFLOW_THROW(Error) << "OpSchemaRegistry: op '" << schema.type() << "' declares attribute '"
                            << a.name << "' twice or empty";
    }
  }
  os::LockGuard lock(mutex_);
  if (schemas_.count(schema.type()) != 0) {
    CHANFLOW_THROW(Error) << "OpSchemaRegistry: op '" << schema.type() << "' is already registered";
  }
  auto owned = std::make_unique<OpSchema>(schema);
  owned->id_ = static_cast<int>(schemas_.size());
  const OpSchema& ref = *owned;
  schemas_.emplace(owned->type(), std::move(owned));
  return ref;
}

const OpSchema* OpSchemaRegistry::find(std::string_view type) const {
  os::SharedLockGuard lock(mutex_);
  auto it = schemas_.find(type);
  return it == schemas_.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpSchemaRegistry::op_types() const {
  os::SharedLockGuard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [k, v] : schemas_) out.push_back(k);
  return out;
}

size_t OpSchemaRegistry::size() const {
  os::SharedLockGuard lock(mutex_);
  return schemas_.size();
}

}  // namespace chanflow
