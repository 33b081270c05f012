// module.cc — the extension module chanflow._native (re-exported by the chanflow package).
#include "native.h"

PYBIND11_MODULE(_native, m) {
  namespace cfp = chanflow::python;
  m.doc() =
      "chanflow's native API: objects, tensors, programs, the executor, graphs and machines, "
      "channels and the function registry (see the chanflow package).";
  m.attr("__version__") = CHANFLOW_VERSION;
  cfp::bind_errors(m);
  cfp::bind_objects(m);  // first: chanflow.Object is the base of the classes below
  cfp::bind_callbacks(m);
  cfp::bind_tensor(m);
  cfp::bind_program(m);
  cfp::bind_builder(m);
  cfp::bind_executor(m);
  cfp::bind_graph(m);
  cfp::bind_channels(m);
  cfp::bind_functions(m);
  cfp::bind_object_classes(m);  // last: the types registered by now get their classes
}
