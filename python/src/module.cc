// module.cc — the extension module chanflow._native (re-exported by the chanflow package).
#include "native.h"

PYBIND11_MODULE(_native, m) {
  namespace cfp = chanflow::python;
  m.doc() = "chanflow's native API: tensors, programs and the executor (see the chanflow package).";
  m.attr("__version__") = CHANFLOW_VERSION;
  cfp::bind_errors(m);
  cfp::bind_tensor(m);
  cfp::bind_program(m);
  cfp::bind_executor(m);
}
