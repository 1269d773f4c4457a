// The weight side of Winograd F(4x4, 3x3) and F(6x6, 3x3), shared by the NEON and x86
// kernels: one 3x3 kernel to its transform U = G g G^T (Lavin & Gray 2016), computed in
// double once at Net load so that packing adds no rounding beyond the final float.
#pragma once

namespace kestrel::kernels {

constexpr int kWinograd43Alpha = 6;  // transform tile side: 4 outputs + 3 taps - 1
constexpr int kWinograd63Alpha = 8;  // 6 outputs + 3 taps - 1

// u[i * 6 + j] = (G g G^T)[i][j] for the row-major 3x3 kernel g.
void winograd43_weight_transform(const float g[9], float u[kWinograd43Alpha * kWinograd43Alpha]);

// u[i * 8 + j] = (G g G^T)[i][j], G of the points 0, 1, -1, 2, -2, 1/2, -1/2 and
// infinity, its rows for +-1/2 scaled by 1/32 (ncnn's; the output transform in
// src/arm/f32_winograd63_transforms_neon.h multiplies by the 32 back).
void winograd63_weight_transform(const float g[9], float u[kWinograd63Alpha * kWinograd63Alpha]);

}  // namespace kestrel::kernels
