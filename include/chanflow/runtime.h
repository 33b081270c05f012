// runtime.h — the CSP runtime layer (being built).
#pragma once

#include "chanflow/core.h"
