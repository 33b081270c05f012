// exec.h — the executor layer (being built).
#pragma once

#include "chanflow/core.h"
