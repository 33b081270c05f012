// verifier.h — checks a program before it runs, and fills attribute defaults.
//
// The verifier enforces what the executor relies on, and reports the first violation as a
// ProgramError whose message names the block index, the op index, the op type and the problem
// (ProgramError::block_index/op_index/op_type carry the same position):
//
//   try { cf::Program ready = cf::verify(program); }
//   catch (const cf::ProgramError& e) {
//     // "block 1, op 2 ('channel_send'): input 'X' is variable 'v' (LOD_TENSOR FP32), but channel
//     //  'ch' carries FP64 tensors (type mismatch)"
//   }
//
// Rules (docs/ir.md lists each with an example):
//   structure — block i has idx i; block 0 has parent_idx -1; every other parent is another
//     existing block and no block is its own ancestor; variables have unique names per block and
//     a complete type (LOD_TENSOR: an element type; CHANNEL: element type and capacity >= 0).
//   ops — the type is registered; every input/output parameter is declared by the schema, required
//     ones are present, non-duplicable ones bind one variable; every variable named is declared in
//     the op's block or an ancestor; attributes are declared by the schema (unknown ones are
//     rejected), have the declared type and pass its check; required ones are present, missing
//     optional ones get their default.
//   sub-blocks — each BLOCK attribute names an existing block other than 0 whose parent_idx is the
//     op's block, and no block is the sub-block of two ops.
//   CSP — Channel inputs (and channel_create's Out) are CHANNEL variables; channel_create's
//     attributes match the declaration; what channel_send sends, channel_recv receives into and a
//     select case moves has the channel's element type; channel_recv's Status is a BOOL tensor.
//   select — `cases` parse ("<index>,<kind>,<channel>,<var>"), indices are 0, 1, 2 ... in order,
//     at most one default, channels are CHANNEL variables and variables are declared;
//     case_to_execute is an integer tensor.
//   control flow — while's Condition and a scalar conditional_block's X are BOOL tensors;
//     fill_constant's Out has the dtype it fills; assign does not mix channels and tensors.
#pragma once

#include "chanflow/core/export.h"
#include "chanflow/ir/op_schema.h"
#include "chanflow/ir/program.h"

namespace chanflow {

// Verifies `program` against the schemas of `registry`. Returns the program with every missing
// optional attribute set to its default (the same program object when nothing was missing).
// Throws ProgramError for the first violation; never crashes on any program, including
// ill-typed ones rebuilt from JSON. Thread-safe (reads the program and the registry only).
CHANFLOW_API Program verify(const Program& program,
                            const OpSchemaRegistry& registry = OpSchemaRegistry::global());

// Checks `program` by the same rules as verify() and throws the same ProgramError, but makes no
// program with the defaults filled: for callers that take a missing attribute's default from its
// schema themselves (the executor), so that checking a large program does not copy every op that
// omits an optional attribute. Thread-safe.
CHANFLOW_API void check_program(const Program& program,
                                const OpSchemaRegistry& registry = OpSchemaRegistry::global());

// Throws `e` with a nested TypeError of the same message: how a program error about a value of the
// wrong type or dtype (a "type mismatch" the verifier or the executor's preparation finds) carries
// its kind, as an op that fails at run time carries its own (std::rethrow_if_nested reaches it).
[[noreturn]] CHANFLOW_API void throw_type_mismatch(const ProgramError& e);

}  // namespace chanflow
