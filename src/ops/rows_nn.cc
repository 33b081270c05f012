// rows_nn.cc — neural-network layers: convolution, pooling, normalisation, dropout, losses.
#include "rows.h"

namespace chanflow {

std::vector<OpDef> nn_rows() { return {}; }

}  // namespace chanflow
