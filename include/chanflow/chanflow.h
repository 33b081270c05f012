// chanflow.h — the umbrella header: everything a chanflow user needs.
//
//   #include <chanflow/chanflow.h>
//   namespace cf = chanflow;
#pragma once

#include "chanflow/core.h"
#include "chanflow/exec.h"
#include "chanflow/graph.h"
#include "chanflow/ir.h"
#include "chanflow/ops.h"
#include "chanflow/runtime.h"
#include "chanflow/tensor.h"
