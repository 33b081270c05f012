// ops.h — the op table layer: every op's schema, inference, kernel and gradient rule
// (op_table.h), and program backward (backward.h).
#pragma once

#include "chanflow/ops/backward.h"
#include "chanflow/ops/op_table.h"
