// block.h — Block, one block of a program (Fluid's BlockDesc): variables and ops run in order.
//
// Block 0 is the program's main block (parent_idx -1). Every other block is the body of one
// control-flow op (`while`, `conditional_block`, `go`, `select`) of its parent block, which names
// it in a BLOCK attribute `sub_block`. A block sees its own variables and its ancestors'.
//
//   cf::Block b = program.block(1);
//   b->parent_idx;                      // 0
//   std::optional<cf::VarDesc> v = b.find_var("status");
//   for (cf::OpDesc op : b->ops) { ... }
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "chanflow/core/array.h"
#include "chanflow/core/export.h"
#include "chanflow/core/object.h"
#include "chanflow/core/reflection.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/var_desc.h"

namespace chanflow {

// The data node; immutable once shared.
class CHANFLOW_API BlockObj : public Object {
 public:
  int64_t idx = 0;
  int64_t parent_idx = -1;
  Array<VarDesc> vars;
  Array<OpDesc> ops;
  int64_t forward_block_idx = -1;  // Fluid's field, kept for round trips; unused by chanflow

  void visit_fields(FieldVisitor& v);
  static constexpr const char* kTypeKey = "ir.Block";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(BlockObj, Object);
};

// A handle to a block. Thread-safe for concurrent reads.
class CHANFLOW_API Block : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Block, ObjectRef, BlockObj);

  static Block make(int64_t idx, int64_t parent_idx, Array<VarDesc> vars, Array<OpDesc> ops,
                    int64_t forward_block_idx = -1);

  // The variable declared in this block (not its ancestors) with this name, or nullopt. Linear.
  std::optional<VarDesc> find_var(std::string_view name) const;
  // Structural equality of every field.
  bool equals(const Block& other) const noexcept;
};

}  // namespace chanflow
