// var_desc.h — VarDesc, the declaration of one variable of a block (Fluid's VarDesc).
//
// A variable has a name unique in its block, a kind (VarType: LOD_TENSOR, CHANNEL, STEP_SCOPES
// ...) and, by kind, an element type: the tensor's dtype, or the channel's element type and
// capacity. Variables are visible in their block and in every block nested under it.
//
//   cf::VarDesc x = cf::VarDesc::tensor("x", cf::VarType::kInt64, {1});
//   cf::VarDesc ch = cf::VarDesc::channel("ch", cf::VarType::kFP64, /*capacity=*/10);
//   ch->type == int64_t(cf::VarType::kChannel) && ch->capacity == 10;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/export.h"
#include "chanflow/core/object.h"
#include "chanflow/core/reflection.h"
#include "chanflow/ir/var_type.h"

namespace chanflow {

// The data node. Fields are public and plain (TVM style); a VarDesc is immutable once shared.
class CHANFLOW_API VarDescObj : public Object {
 public:
  std::string name;
  int64_t type = static_cast<int64_t>(VarType::kLoDTensor);  // a VarType number
  // LOD_TENSOR (and SELECTED_ROWS): the element VarType. CHANNEL: the element type of the channel
  // (an element VarType, LOD_TENSOR for tensors of any dtype, CHANNEL for channels). -1 when unset.
  int64_t data_type = -1;
  Array<Int> dims;        // tensor dims as declared (informational; -1 = unknown extent)
  int64_t lod_level = 0;  // LOD_TENSOR only
  int64_t capacity = 0;   // CHANNEL only: 0 = unbuffered
  bool persistable = false;

  VarType var_type() const noexcept { return static_cast<VarType>(type); }
  void visit_fields(FieldVisitor& v);
  static constexpr const char* kTypeKey = "ir.VarDesc";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(VarDescObj, Object);
};

// A handle to a variable declaration. Thread-safe for concurrent reads.
class CHANFLOW_API VarDesc : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(VarDesc, ObjectRef, VarDescObj);

  // A LOD_TENSOR variable with element type `element` (an element VarType) and optional dims.
  static VarDesc tensor(std::string name, VarType element, const std::vector<int64_t>& dims = {},
                        bool persistable = false);
  // A CHANNEL variable carrying `element` values (see VarDescObj::data_type), with a capacity.
  static VarDesc channel(std::string name, VarType element, int64_t capacity);
  // A variable of another kind (STEP_SCOPES, RAW ...) with no element type.
  static VarDesc other(std::string name, VarType kind);
  // Makes a VarDesc from all its fields.
  static VarDesc make(std::string name, int64_t type, int64_t data_type,
                      const std::vector<int64_t>& dims, int64_t lod_level, int64_t capacity,
                      bool persistable);

  // Structural equality of every field.
  bool equals(const VarDesc& other) const noexcept;
};

}  // namespace chanflow
