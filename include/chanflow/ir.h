// ir.h — the program IR layer: programs as chanflow objects, their protobuf file format (text and
// binary, Fluid-compatible), op schemas, the verifier and ProgramBuilder.
//
//   #include <chanflow/ir.h>
//   cf::Program p = cf::Program::from_file("examples/programs/go_op.pbtxt");
//   cf::Program checked = cf::verify(p);       // ProgramError names block, op and problem
#pragma once

#include "chanflow/core.h"
#include "chanflow/ir/attr.h"
#include "chanflow/ir/block.h"
#include "chanflow/ir/builder.h"
#include "chanflow/ir/capture.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/op_schema.h"
#include "chanflow/ir/program.h"
#include "chanflow/ir/select_case.h"
#include "chanflow/ir/var_desc.h"
#include "chanflow/ir/var_type.h"
#include "chanflow/ir/verifier.h"
