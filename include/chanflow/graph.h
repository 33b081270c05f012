// graph.h — expression graphs and the GoMachine (being built).
#pragma once

#include "chanflow/core.h"
