// op_schema.h — OpSchema, what an op type accepts, and the registry of every op type.
//
// A schema lists an op's input and output parameters (name, required, duplicable — Fluid's names:
// X, Y, Out, Condition, Channel, Status ...), its attributes (type, default or required, an
// optional check) and which attributes are sub-blocks. The verifier checks ops against their
// schema; ProgramBuilder emits ops that satisfy it. Every op of issue 5 is registered on first use
// of the global registry (compute ops, `while`, `conditional_block`, `go`, `select`, the
// channel ops):
//
//   const cf::OpSchema* s = cf::OpSchemaRegistry::global().find("channel_send");
//   s->input("Channel")->required;                 // true
//   s->attr("copy")->make_default().as_bool();     // false
//
//   // A new op type (e.g. a plug-in):
//   cf::OpSchemaRegistry::global().add(cf::OpSchema("my_op")
//       .input("X").output("Out")
//       .attr("alpha", cf::AttrType::kFloat, [] { return cf::Attr::f(1.0); }));
//
// The exec layer attaches its kernel and shape/dtype inference to a schema with set_extension():
// an OpExtension subclass of its own, looked up once per op when a program is prepared (see
// docs/ir.md, "Hooks for the executor"). The ir layer never looks inside an extension.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/core/locks.h"
#include "chanflow/ir/attr.h"

namespace chanflow {

// An input or output parameter of an op.
struct ArgSpec {
  std::string name;
  bool required = true;     // must be present with at least one argument
  bool duplicable = false;  // may bind more than one variable
  std::string doc;
};

// An attribute of an op.
struct AttrSpec {
  std::string name;
  AttrType type = AttrType::kInt;
  // Makes the default value; empty when the attribute is required. A function (not a stored
  // value) so that the registry holds no objects between uses.
  std::function<Attr()> make_default;
  // Checks a value of the right type: returns "" when it is fine, else the problem ("must be >=
  // 0, got -1"). Optional.
  std::function<std::string(const Attr&)> check;
  std::string doc;

  bool required() const noexcept { return !make_default; }
};

// What the exec layer attaches to a schema (kernel, inference ...). Subclass it.
class CHANFLOW_API OpExtension {
 public:
  virtual ~OpExtension() = default;
};

// The schema of one op type. Built with the chained methods below, then added to a registry,
// after which it is immutable except for its extension. Reads are thread-safe.
class CHANFLOW_API OpSchema {
 public:
  explicit OpSchema(std::string type) : type_(std::move(type)) {}
  OpSchema(const OpSchema& other);
  OpSchema& operator=(const OpSchema& other);

  // Declaration (chainable; used before the schema is added to a registry).
  OpSchema& doc(std::string text);
  OpSchema& input(std::string name, bool required = true, bool duplicable = false,
                  std::string doc = {});
  OpSchema& output(std::string name, bool required = true, bool duplicable = false,
                   std::string doc = {});
  // An attribute with a default (make_default) or, when make_default is empty, a required one.
  OpSchema& attr(std::string name, AttrType type, std::function<Attr()> make_default = {},
                 std::string doc = {}, std::function<std::string(const Attr&)> check = {});
  // Marks an op whose kernel is not one of the exec layer's built-in kernel rows (a plug-in
  // attaches it, or only a tool reads the op); `where` says where it lives. Built-in schemas
  // without the mark each have a built-in kernel (the exec layer's tests check it).
  OpSchema& kernel_elsewhere(std::string where);

  const std::string& type() const noexcept { return type_; }
  const std::string& doc_text() const noexcept { return doc_; }
  const std::vector<ArgSpec>& inputs() const noexcept { return inputs_; }
  const std::vector<ArgSpec>& outputs() const noexcept { return outputs_; }
  const std::vector<AttrSpec>& attrs() const noexcept { return attrs_; }
  // What kernel_elsewhere said; empty when the op's kernel is a built-in one.
  const std::string& kernel_location() const noexcept { return kernel_location_; }
  const ArgSpec* input(std::string_view name) const noexcept;
  const ArgSpec* output(std::string_view name) const noexcept;
  const AttrSpec* attr(std::string_view name) const noexcept;
  // Names of the BLOCK attributes (the op's sub-blocks), in declaration order.
  std::vector<std::string> block_attrs() const;

  // A dense id given by the registry (0, 1, 2 ... in registration order); -1 before add(). The
  // exec layer can index per-op tables with it instead of hashing type names.
  int id() const noexcept { return id_; }

  // Attaches the exec layer's data (replacing any previous one). Thread-safe; cheap to read.
  void set_extension(std::shared_ptr<const OpExtension> extension) const;
  // The attached extension, or null. Thread-safe.
  std::shared_ptr<const OpExtension> extension() const;

 private:
  friend class OpSchemaRegistry;
  std::string type_;
  std::string doc_;
  std::vector<ArgSpec> inputs_;
  std::vector<ArgSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  std::string kernel_location_;
  int id_ = -1;
  mutable os::Mutex extension_mutex_;
  mutable std::shared_ptr<const OpExtension> extension_ CHANFLOW_GUARDED_BY(extension_mutex_);
};

// A set of op schemas by type name. Thread-safe: add() takes a writer lock, lookups a reader
// lock; returned pointers stay valid for the registry's lifetime (schemas are never removed).
class CHANFLOW_API OpSchemaRegistry {
 public:
  OpSchemaRegistry() = default;
  OpSchemaRegistry(const OpSchemaRegistry&) = delete;
  OpSchemaRegistry& operator=(const OpSchemaRegistry&) = delete;

  // The process-wide registry, with every built-in op (builtin_ops) registered on first use.
  static OpSchemaRegistry& global();
  // A registry holding just the built-in ops (for tests and embedders that want isolation).
  static std::unique_ptr<OpSchemaRegistry> with_builtin_ops();

  // Adds a schema; throws Error when the type is empty or already registered, or when a
  // parameter or attribute name repeats.
  const OpSchema& add(const OpSchema& schema);
  // The schema of `type`, or null.
  const OpSchema* find(std::string_view type) const;
  // Every registered type, sorted.
  std::vector<std::string> op_types() const;
  size_t size() const;

 private:
  mutable os::SharedMutex mutex_;
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> schemas_
      CHANFLOW_GUARDED_BY(mutex_);
};

// Registers chanflow's built-in ops into `registry` (what global() does once): the ir layer's own
// and those of every provider added with add_builtin_op_provider.
CHANFLOW_API void register_builtin_ops(OpSchemaRegistry& registry);

// Adds a function registering more built-in op schemas. A layer above ir whose ops programs name
// (the op table of chanflow::ops) adds its provider while it loads, so that a program naming its
// ops verifies wherever that layer is linked, before any of its functions ran. The provider is
// applied at once to the global registry when it exists, else when it is made, and to every
// registry register_builtin_ops fills from now on. Adding the same provider again does nothing.
// Thread-safe.
CHANFLOW_API void add_builtin_op_provider(void (*provider)(OpSchemaRegistry& registry));

// The attributes Paddle Fluid wrote on ops whatever they compute: the framework's `op_role`
// (INT), `op_role_var` (STRINGS), `op_namescope` (STRING), `op_callstack` (STRINGS) and
// `op_device` (STRING), which steer Paddle's graph passes (backward, optimizer and device
// placement), and the kernel hints `use_mkldnn` (BOOLEAN), `x_data_format` and `y_data_format`
// (STRING). chanflow has neither the passes nor the kernels: the verifier accepts these on any op
// with their type checked, and nothing reads them. Returns the spec of `name` whose type is `type`
// (op_role_var is STRINGS, or STRING as in the first Fluid version that had it), else the first
// spec of `name` (the verifier then reports the type it expects), or null for any other name.
// Thread-safe.
CHANFLOW_API const AttrSpec* framework_attr(std::string_view name, AttrType type) noexcept;

}  // namespace chanflow
