// ir.h — the program IR layer (being built).
#pragma once

#include "chanflow/core.h"
