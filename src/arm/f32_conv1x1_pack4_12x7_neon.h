// The inner loop of the NEON 1x1 convolution on pack4 maps with 12 output channels x 7
// pixels per tile (f32_conv1x1_pack4_12x7_neon.cpp): 21 float32x4_t accumulators, each
// one pixel's 4 output channels, stored as they are.
//
// Why 12 x 7 and not 8 x 8 (f32_conv1x1_pack4_8x8_neon.h): with the input read in
// place, a 4-channel step of A output blocks x P pixels loads P input vectors and 4A
// weight vectors, in ld1 of at most 4 registers, and runs 4AP FMAs; the registers bound
// it (A P accumulators + what the step keeps live <= 32). 8 x 8 keeps all 16 operands
// of a step live: 4 loads per 64 FMAs (6.25%). 12 x 7 keeps the 7 input vectors live and
// streams the weights one output block (4 vectors) at a time through 4 registers:
// 21 + 7 + 4 = 32, 5 loads per 84 FMAs (5.95%), the fewest of any A x P that fits
// (A 2 P 10: 6.25%, A 4 P 5: 7.5%). The step:
//   ld1 {v0-v3}, ld1 {v4-v6}         pixels 0..6 of input block j (28 contiguous floats)
//   3 x (ld1 {v7-v10}; 28 fmla)      output block g: rows 4j..4j+3 of its 4 channels
// Self-contained (only <arm_neon.h>) so that bench scripts can compile it alone.
//
// Operand layouts (written by f32_conv1x1_pack4_12x7_neon.cpp):
//   weights  block b: its bias broadcast [3][7 pixels][4], then
//            w[(j * 3 + g) * 16 + k * 4 + o] : input channel 4j + k, output channel
//            12b + 4g + o. The bias first, so that the tile's one pointer reads it
//            and then the rows, post-incremented (no other address register).
//   input    x + j * xstep + 4 p : channel block j of pixel p
// Every accumulator is bias, then fma with input channels 0..K-1 in order: the fma
// chain of the planar f32_conv1x1_8x8_neon, so blocked and planar maps give the same
// bits. The activation runs in the assembly on the accumulators before the store, as
// the planar kernel's epilogue computes it (ReLU fmax with 0; Clip fmax alpha then
// fmin beta; LeakyReLU x > 0 ? x : x * alpha by bif): all 32 registers are the loop's,
// so no operand could carry the accumulators out of one asm into another (GCC also
// allows at most 30 operands).
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace kestrel::kernels::arm::conv1x1_pack4_12x7 {

constexpr int kTilePixels = 7;
constexpr int kGroups = 3;                       // output blocks of 4 channels per tile
constexpr int kBlockOut = 4 * kGroups;           // output channels per weight block
constexpr size_t kStepWeights = 16 * kGroups;    // weight floats of one 4-channel step
constexpr size_t kGroupBias = 4 * kTilePixels;   // floats of one group's broadcast bias
constexpr size_t kBiasFloats = kGroups * kGroupBias;
// The K loop is a body of 16 steps that the first turn enters part-way (at step
// (16 - kb % 16) % 16, through a computed branch), or of 32 steps entered at its start
// when kb is a multiple of 32: 2 loop instructions per 16 or 32 steps of 89.
constexpr size_t kBodySteps = 16;
constexpr size_t kLongBodySteps = 32;

// Instructions of one step for N pixels (the assembly checks the size: .error).
constexpr size_t step_instructions(int n) { return (n > 4 ? 2 : 1) + kGroups * (1 + 4 * n); }
constexpr size_t step_bytes(int n) { return 4 * step_instructions(n); }

// kHalf: kb % 16 == 8 (K = 32: the 1x1 after a stem of 32 channels), the body entered
// at its step 8 by a plain branch, not the computed one (2 instructions a tile fewer).
enum class Body { kEntered, kHalf, kWhole16, kWhole32 };
// The activation the tile applies before its store (any other: stored linear).
enum class Act { kNone = 0, kReLU = 1, kClip = 2, kLeaky = 3 };

struct Loop {
  size_t kb;
  size_t skip;         // steps of the 16-step body the first turn skips
  size_t xstep;        // bytes between input blocks
  ptrdiff_t x7_next;   // from past a 7-pixel tile's last block to the next tile's first
  Loop(size_t kb_, size_t xstep_floats)
      : kb(kb_),
        skip((kBodySteps - kb % kBodySteps) % kBodySteps),
        xstep(xstep_floats * sizeof(float)),
        x7_next(static_cast<ptrdiff_t>(kTilePixels * 4 * sizeof(float)) - static_cast<ptrdiff_t>(kb * xstep)) {}
};

// Floats of one block's weights and bias.
constexpr size_t block_floats(size_t kb) { return kBiasFloats + kb * kStepWeights; }

// Registers: v0-v6 the input (pixels 0..6), v7-v10 one output block's weights of the
// step (rows k = 0..3), v11-v17 / v18-v24 / v25-v31 the accumulators of output blocks
// 0 / 1 / 2. N (pixels) and the activation are assembler symbols (kc12_n, kc12_act),
// so one text serves every variant (.if); the loop ends on the weight pointer.
#define KC12_NL "\n\t"
#define KC12_V(r) "v" #r ".4s"
// An ld1/st1 of E (an assembler expression, >= 1; 4 and more: 4) registers from r0.
#define KC12_LIST(op, E, r0, r1, r2, r3, post)                                                                \
  ".if (" E ") == 1" KC12_NL op " {" KC12_V(r0) "}" post KC12_NL ".elseif (" E ") == 2" KC12_NL op " {"      \
  KC12_V(r0) ", " KC12_V(r1) "}" post KC12_NL ".elseif (" E ") == 3" KC12_NL op " {" KC12_V(r0) ", "          \
  KC12_V(r1) ", " KC12_V(r2) "}" post KC12_NL ".else" KC12_NL op " {" KC12_V(r0) "-" KC12_V(r3) "}" post      \
  KC12_NL ".endif" KC12_NL
#define KC12_IFN(k, text) ".if kc12_n > " #k KC12_NL text ".endif" KC12_NL
#define KC12_CALL(m, ...) m(__VA_ARGS__)
// OP(acc, p) for the N accumulators a0.. of one group.
#define KC12_EACH(OP, a0, a1, a2, a3, a4, a5, a6)                                                  \
  OP(a0, 0) KC12_IFN(1, OP(a1, 1)) KC12_IFN(2, OP(a2, 2)) KC12_IFN(3, OP(a3, 3)) KC12_IFN(4, OP(a4, 4)) \
  KC12_IFN(5, OP(a5, 5)) KC12_IFN(6, OP(a6, 6))
#define KC12_G0 11, 12, 13, 14, 15, 16, 17
#define KC12_G1 18, 19, 20, 21, 22, 23, 24
#define KC12_G2 25, 26, 27, 28, 29, 30, 31
#define KC12_ALL(OP) KC12_CALL(KC12_EACH, OP, KC12_G0) KC12_CALL(KC12_EACH, OP, KC12_G1) KC12_CALL(KC12_EACH, OP, KC12_G2)
// Row k of the step (weights in v7 + k) into a group's accumulators, by input lane k.
#define KC12_F0(a, p) "fmla " KC12_V(a) ", v7.4s, v" #p ".s[0]" KC12_NL
#define KC12_F1(a, p) "fmla " KC12_V(a) ", v8.4s, v" #p ".s[1]" KC12_NL
#define KC12_F2(a, p) "fmla " KC12_V(a) ", v9.4s, v" #p ".s[2]" KC12_NL
#define KC12_F3(a, p) "fmla " KC12_V(a) ", v10.4s, v" #p ".s[3]" KC12_NL
#define KC12_GROUP(G)                                                                                        \
  "ld1 {v7.4s-v10.4s}, [%[w]], #64" KC12_NL KC12_CALL(KC12_EACH, KC12_F0, G) KC12_CALL(KC12_EACH, KC12_F1, G) \
  KC12_CALL(KC12_EACH, KC12_F2, G) KC12_CALL(KC12_EACH, KC12_F3, G)
// The input: N <= 4 pixels in one ld1 post-incremented by the block step; more in an
// ld1 of 4 and one of the rest (xs is then the block step less 64).
#define KC12_LOAD_X                                                                                  \
  ".if kc12_n <= 4" KC12_NL KC12_LIST("ld1", "kc12_n", 0, 1, 2, 3, ", [%[x]], %[xs]") ".else" KC12_NL \
  "ld1 {v0.4s-v3.4s}, [%[x]], #64" KC12_NL KC12_LIST("ld1", "kc12_n - 4", 4, 5, 6, 6, ", [%[x]], %[xs]") \
  ".endif" KC12_NL
#define KC12_STEP KC12_LOAD_X KC12_GROUP(KC12_G0) KC12_GROUP(KC12_G1) KC12_GROUP(KC12_G2)
#define KC12_STEP4 KC12_STEP KC12_STEP KC12_STEP KC12_STEP
#define KC12_STEP16 KC12_STEP4 KC12_STEP4 KC12_STEP4 KC12_STEP4
// A group's run of N vectors through pointer p (ld1 of the bias, st1 of the output):
// 7 pixels post-increment p past the run (#64, #48); fewer leave p where the caller
// does not look again, except SKIP, which moves it to the next run's start.
#define KC12_RUN1(op, p, skip, a0, a1, a2, a3, a4, a5, a6)                                          \
  ".if kc12_n == 7" KC12_NL op " {" KC12_V(a0) "-" KC12_V(a3) "}, [%[" #p "]], #64" KC12_NL op " {"  \
  KC12_V(a4) "-" KC12_V(a6) "}, [%[" #p "]], #48" KC12_NL ".elseif kc12_n > 4" KC12_NL op " {"         \
  KC12_V(a0) "-" KC12_V(a3) "}, [%[" #p "]], #64" KC12_NL                                            \
  KC12_LIST(op, "kc12_n - 4", a4, a5, a6, a6, ", [%[" #p "]]") skip(48) ".else" KC12_NL               \
  KC12_LIST(op, "kc12_n", a0, a1, a2, a3, ", [%[" #p "]]") skip(112) ".endif" KC12_NL
#define KC12_RUN(op, p, skip, G) KC12_CALL(KC12_RUN1, op, p, skip, G)
#define KC12_BIAS_SKIP(bytes) "add %[w], %[w], #" #bytes KC12_NL
#define KC12_NO_SKIP(bytes)
#define KC12_BIAS                                                                                     \
  KC12_RUN("ld1", w, KC12_BIAS_SKIP, KC12_G0) KC12_RUN("ld1", w, KC12_BIAS_SKIP, KC12_G1)              \
  KC12_RUN("ld1", w, KC12_BIAS_SKIP, KC12_G2)
#define KC12_STORE \
  KC12_RUN("st1", o0, KC12_NO_SKIP, KC12_G0) KC12_RUN("st1", o1, KC12_NO_SKIP, KC12_G1) KC12_RUN("st1", o2, KC12_NO_SKIP, KC12_G2)
// The activation in place: v0 (and v1) its constants, v1 and v2 LeakyReLU's temporaries.
#define KC12_RELU(a, p) "fmax " KC12_V(a) ", " KC12_V(a) ", v0.4s" KC12_NL
#define KC12_CLIP(a, p) KC12_RELU(a, p) "fmin " KC12_V(a) ", " KC12_V(a) ", v1.4s" KC12_NL
#define KC12_LEAKY(a, p) \
  "fmul v1.4s, " KC12_V(a) ", v0.4s" KC12_NL "fcmgt v2.4s, " KC12_V(a) ", #0.0" KC12_NL "bif v" #a ".16b, v1.16b, v2.16b" KC12_NL
#define KC12_ACTIVATE                                                                                       \
  ".if kc12_act == 1" KC12_NL "movi v0.4s, #0" KC12_NL KC12_ALL(KC12_RELU) ".elseif kc12_act == 2" KC12_NL  \
  "ld1 {v0.4s, v1.4s}, [%[act]]" KC12_NL KC12_ALL(KC12_CLIP) ".elseif kc12_act == 3" KC12_NL                 \
  "ld1 {v0.4s}, [%[act]]" KC12_NL KC12_ALL(KC12_LEAKY) ".endif" KC12_NL
#define KC12_ENTER                  \
  "adr %[e], .Lkc12_body%=" KC12_NL \
  "add %[e], %[e], %[entry]" KC12_NL \
  "br %[e]\n"
#define KC12_TILE(ENTER, MORE, NEXT)                                                                          \
  asm volatile(".set kc12_n, %c[np]" KC12_NL ".set kc12_act, %c[ak]" KC12_NL KC12_BIAS ENTER                   \
               ".Lkc12_body%=:" KC12_NL KC12_STEP ".Lkc12_step1%=:" KC12_NL KC12_STEP KC12_STEP KC12_STEP      \
               KC12_STEP4 ".Lkc12_step8%=:" KC12_NL KC12_STEP4 KC12_STEP4 MORE "cmp %[w], %[wend]" KC12_NL "b.ne .Lkc12_body%=" KC12_NL  \
               ".if .Lkc12_step1%= - .Lkc12_body%= - %c[sb]" KC12_NL                                           \
               ".error \"step_bytes() is not the size of a step\"" KC12_NL ".endif" KC12_NL NEXT KC12_ACTIVATE \
               KC12_STORE                                                                                      \
               : [w] "+r"(w), [x] "+r"(x), [e] "=&r"(e), [o0] "+r"(o0), [o1] "+r"(o1), [o2] "+r"(o2)           \
               : [entry] "r"(entry), [wend] "r"(wend), [xs] "r"(xs), [xn] "r"(lp.x7_next), [act] "r"(act),      \
                 [np] "i"(N), [ak] "i"(static_cast<int>(kAct)), [sb] "i"(step_bytes(N))                        \
               : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", \
                 "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27",    \
                 "v28", "v29", "v30", "v31", "cc", "memory")

// The N-pixel tile over lp.kb >= 1 input blocks, activated and stored. w: the block
// (bias, then kb * 192 bytes of weights); x: the tile's first pixel in input block 0;
// o0, o1, o2: its first pixel in its three output blocks; act: the activation's
// constants (alpha x 4, beta x 4). N = 7 moves x and o0..o2 on to the next 7-pixel
// tile (x + 28 floats, o + 28 floats); N < 7 leaves them anywhere.
template <int N, Body kBody, Act kAct>
__attribute__((always_inline)) inline void tile(const Loop& lp, const float* w, const float*& x, float*& o0,
                                                float*& o1, float*& o2, const float* act) {
  static_assert(N >= 1 && N <= kTilePixels, "1..7 pixels");
  static_assert(N == kTilePixels || kBody == Body::kEntered, "whole bodies for 7-pixel tiles");
  const float* wend = w + block_floats(lp.kb);
  const size_t xs = N > 4 ? lp.xstep - 64 : lp.xstep;
  const size_t entry = kBody == Body::kEntered ? lp.skip * step_bytes(N) : 0;
  uint64_t e;
  if constexpr (kBody == Body::kWhole32) {
    KC12_TILE("", KC12_STEP16, "add %[x], %[x], %[xn]" KC12_NL);
  } else if constexpr (kBody == Body::kWhole16) {
    KC12_TILE("", "", "add %[x], %[x], %[xn]" KC12_NL);
  } else if constexpr (kBody == Body::kHalf) {
    KC12_TILE("b .Lkc12_step8%=" KC12_NL, "", "add %[x], %[x], %[xn]" KC12_NL);
  } else if constexpr (N == kTilePixels) {
    KC12_TILE(KC12_ENTER, "", "add %[x], %[x], %[xn]" KC12_NL);
  } else {
    KC12_TILE(KC12_ENTER, "", "");
  }
}

#undef KC12_NL
#undef KC12_V
#undef KC12_LIST
#undef KC12_IFN
#undef KC12_CALL
#undef KC12_EACH
#undef KC12_G0
#undef KC12_G1
#undef KC12_G2
#undef KC12_ALL
#undef KC12_F0
#undef KC12_F1
#undef KC12_F2
#undef KC12_F3
#undef KC12_GROUP
#undef KC12_LOAD_X
#undef KC12_STEP
#undef KC12_STEP4
#undef KC12_STEP16
#undef KC12_RUN1
#undef KC12_RUN
#undef KC12_BIAS_SKIP
#undef KC12_NO_SKIP
#undef KC12_BIAS
#undef KC12_STORE
#undef KC12_RELU
#undef KC12_CLIP
#undef KC12_LEAKY
#undef KC12_ACTIVATE
#undef KC12_ENTER
#undef KC12_TILE

}  // namespace kestrel::kernels::arm::conv1x1_pack4_12x7
