#include "kernels/winograd43_weights.h"

namespace kestrel::kernels {

void winograd43_weight_transform(const float g[9], float u[kWinograd43Alpha * kWinograd43Alpha]) {
  constexpr int A = kWinograd43Alpha;
  static const double kG[A][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
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

}  // namespace kestrel::kernels
