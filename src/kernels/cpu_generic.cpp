// Architectures without fast kernels: the reference code only.
#include "kernels/isa.h"

namespace kestrel::kernels::detail {

Isa detect_host_isa() { return Isa::kRef; }
bool detect_in_order_cores() { return false; }
bool detect_feature(Feature, Isa) { return false; }

}  // namespace kestrel::kernels::detail
