// json.h — save and load graphs of objects as JSON, through reflection.
//
//   std::string text = cf::to_json(root);        // shared references stay shared
//   cf::ObjectRef copy = cf::from_json(text);    // throws cf::Error on malformed or ill-typed
//   input
//
// Format: {"format": "chanflow.json", "version": 1, "root": R, "nodes": [...]}. Each node is
// {"type": key, ...}: String/Int/Float/Bool carry "value", Array "items", Map "keys" and "values",
// reflected types "fields". References are indices into "nodes" (null for a null handle); a node
// may only reference nodes before it, so cycles cannot be expressed (to_json rejects them too).
// Doubles that JSON cannot hold are written as the strings "nan", "inf" and "-inf".
#pragma once

#include <string>
#include <string_view>

#include "chanflow/core/export.h"
#include "chanflow/core/object.h"

namespace chanflow {

// Serialises the object graph reachable from root. Throws Error naming the type when an object is
// neither a built-in container nor reflected, and when the graph has a cycle.
CHANFLOW_API std::string to_json(const ObjectRef& root);

// Rebuilds an object graph saved by to_json. Throws Error naming the node and the problem for
// malformed JSON, unknown types, missing or ill-typed fields, and forward (cyclic) references.
CHANFLOW_API ObjectRef from_json(std::string_view text);

}  // namespace chanflow
