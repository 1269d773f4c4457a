#include "kernels/winograd_weights.h"

namespace kestrel::kernels {
namespace {

template <int A>
void transform(const double (&kG)[A][3], const float g[9], float* u) {
  double gw[A][3];  // G * g
  for (int i = 0; i < A; ++i) {
    for (int c = 0; c < 3; ++c) gw[i][c] = kG[i][0] * g[c] + kG[i][1] * g[3 + c] + kG[i][2] * g[6 + c];
  }
  for (int i = 0; i < A; ++i) {
    for (int j = 0; j < A; ++j) {
      u[i * A + j] = static_cast<float>(gw[i][0] * kG[j][0] + gw[i][1] * kG[j][1] + gw[i][2] * kG[j][2]);
    }
  }
}

}  // namespace

void winograd43_weight_transform(const float g[9], float u[kWinograd43Alpha * kWinograd43Alpha]) {
  static const double kG[kWinograd43Alpha][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                                 {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                                 {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  transform(kG, g, u);
}

void winograd63_weight_transform(const float g[9], float u[kWinograd63Alpha * kWinograd63Alpha]) {
  static const double kG[kWinograd63Alpha][3] = {
      {1, 0, 0},
      {-2.0 / 9, -2.0 / 9, -2.0 / 9},
      {-2.0 / 9, 2.0 / 9, -2.0 / 9},
      {1.0 / 90, 1.0 / 45, 2.0 / 45},
      {1.0 / 90, -1.0 / 45, 2.0 / 45},
      {1.0 / 45, 1.0 / 90, 1.0 / 180},
      {1.0 / 45, -1.0 / 90, 1.0 / 180},
      {0, 0, 1},
  };
  transform(kG, g, u);
}

}  // namespace kestrel::kernels
