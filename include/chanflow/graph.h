// graph.h — the graph layer: expression graphs with build-time shape inference, reverse-mode
// gradients, the sequential TapeMachine and the GoMachine (nodes as concurrent state machines on
// green threads).
//
//   #include <chanflow/graph.h>
//   cf::Graph g;
//   cf::Node a = g.scalar(40.0f, "n1"), b = g.scalar(2.0f, "n2");
//   cf::Node c = a - b;
//   cf::GoMachine m(g);
//   m.run(cf::background());
//   float v = m.result(c).item<float>();   // 38
#pragma once

#include "chanflow/core.h"
#include "chanflow/graph/go_machine.h"
#include "chanflow/graph/grad.h"
#include "chanflow/graph/graph.h"
#include "chanflow/graph/ops.h"
#include "chanflow/graph/optimizer.h"
#include "chanflow/graph/table_ops.h"
#include "chanflow/graph/tape_machine.h"
