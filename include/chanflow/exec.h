// exec.h — the executor layer: Scope, the op kernels and Executor (runs ir Programs with go,
// select and channels on the runtime's green threads).
#pragma once

#include "chanflow/exec/channels.h"
#include "chanflow/exec/executor.h"
#include "chanflow/exec/op_registry.h"
#include "chanflow/exec/persistent_scope.h"
#include "chanflow/exec/scope.h"
