// core.h — the object layer: Object, ObjectPtr, ObjectRef, the type registry, the containers and
// the global function registry.
#pragma once

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/core/function.h"
#include "chanflow/core/json.h"
#include "chanflow/core/map.h"
#include "chanflow/core/object.h"
#include "chanflow/core/object_hash.h"
#include "chanflow/core/object_pool.h"
#include "chanflow/core/reflection.h"
#include "chanflow/core/string.h"
#include "chanflow/core/type_registry.h"
