// graph.cc — see native.h. (Bound by its own change; empty until then.)
#include "native.h"

namespace chanflow::python {

void bind_graph(py::module_& m) { (void)m; }

}  // namespace chanflow::python
