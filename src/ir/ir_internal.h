// Private declarations shared by the ir layer's .cc files. Protobuf types stay here and in .cc
// files: public headers never include generated code.
#pragma once

#include <google/protobuf/text_format.h>

#include <memory>
#include <string>
#include <string_view>

#include "chanflow/ir/op_schema.h"
#include "chanflow/ir/program.h"
#include "chanflow/ir/program.pb.h"

namespace chanflow::ir_detail {

// Registers the ir layer's own op schemas (builtin_ops.cc); register_builtin_ops adds the
// providers' ones after them.
void register_ir_ops(OpSchemaRegistry& registry);

// Registers the IR types' reflection (idempotent); called before JSON save/load.
void ensure_reflection();

// Builds a program from its messages one at a time, checking the structure of each as
// from_proto does: begin_block, then the block's vars and ops in any order (each keeps its order
// among its kind), then end_block with a BlockDesc holding the block's scalar fields (its vars
// and ops are not read); finish() after the last block. A loader that parses one message at a
// time hands each over and frees it, so that only the objects grow with the program. `source`
// prefixes every message, `info` (may be null) gives line numbers. Throws ProgramError.
class ProgramAssembler {
 public:
  ProgramAssembler(std::string_view source,
                   const google::protobuf::TextFormat::ParseInfoTree* info);
  ~ProgramAssembler();
  ProgramAssembler(const ProgramAssembler&) = delete;
  ProgramAssembler& operator=(const ProgramAssembler&) = delete;

  void begin_block();
  // Fails unless `header` has the fields a block must have (idx, parent_idx).
  void check_header(const ir::pb::BlockDesc& header) const;
  void add_var(const ir::pb::VarDesc& var);
  void add_op(const ir::pb::OpDesc& op);
  void end_block(const ir::pb::BlockDesc& header);
  // The program; fails when it has no block.
  Program finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Converts a parsed ProgramDesc to objects, checking the structure (field presence, duplicate
// parameters/attributes, attribute value fields that disagree with the type). `source` prefixes
// every message; `info` (text input only, may be null) gives line numbers. Consumes `desc`: each
// message is freed as soon as it is converted (left empty), so that the message and the objects
// are not both whole in memory. Throws ProgramError.
Program from_proto(ir::pb::ProgramDesc& desc, std::string_view source,
                   const google::protobuf::TextFormat::ParseInfoTree* info);

// Converts objects to a ProgramDesc. Throws ProgramError for values the format cannot hold.
ir::pb::ProgramDesc to_proto(const Program& program);

}  // namespace chanflow::ir_detail
