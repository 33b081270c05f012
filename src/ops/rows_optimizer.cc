// rows_optimizer.cc — Paddle's optimiser ops (sgd, momentum, adam) and initialisers.
#include "rows.h"

namespace chanflow {

std::vector<OpDef> optimizer_rows() { return {}; }

}  // namespace chanflow
