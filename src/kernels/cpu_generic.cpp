// Architectures without fast kernels: the reference code only.
#include "kernels/isa.h"

namespace kestrel::kernels::detail {

Isa detect_host_isa() { return Isa::kRef; }

}  // namespace kestrel::kernels::detail
