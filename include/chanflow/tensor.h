// tensor.h — the tensor layer (being built).
#pragma once

#include "chanflow/core.h"
