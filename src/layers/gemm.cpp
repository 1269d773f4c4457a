// Gemm (ONNX Gemm / 2-D MatMul): Y = alpha * op(A) * op(B) + beta * C, with A the
// first bottom [M,K], B the second bottom or a weight, C an optional broadcast weight.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

// A row-major 2-D operand read through strides, so that transposition is free.
struct Operand {
  const float* data = nullptr;
  size_t row = 0, col = 0;  // strides of the logical (post-transpose) indices
  float at(size_t r, size_t c) const { return data[r * row + c * col]; }
};

// Output columns per task: rows times column blocks spread the work over threads
// even when M is 1, and each value is still summed by one thread in k order.
constexpr int kColumnBlock = 64;

class Gemm final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::GemmParam* p = ctx.layer->params_as_GemmParam();
    if (!p) return corrupt("missing GemmParam");
    trans_a_ = p->trans_a();
    trans_b_ = p->trans_b();
    alpha_ = p->alpha();
    beta_ = p->beta();
    weights_ = ctx.weights;
    if (weights_.size() > 2) return corrupt("expects at most 2 weights (B, C), got " + std::to_string(weights_.size()));
    for (const WeightView& w : weights_) {
      if (!w.data || w.shape.size() > 2) {
        return corrupt("weight shape " + layer_util::join_dims(w.shape) + " is not a 1-D or 2-D matrix");
      }
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Gemm", inputs, 1, 2, outputs);
    if (!s.ok()) return s;
    const bool b_is_input = inputs.size() == 2;
    for (const Shape& in : inputs) {
      if (in.dims != 2) return corrupt("Gemm needs 2-D inputs, got " + std::to_string(in.dims) + " dims");
    }
    // A is [h][w]: [M,K], or [K,M] when transposed.
    const int m = trans_a_ ? inputs[0].w : inputs[0].h;
    const int k = trans_a_ ? inputs[0].h : inputs[0].w;
    int b_rows = 0, b_cols = 0;
    if (b_is_input) {
      if (weights_.size() > 1) return corrupt("with B as an input, only C may be a weight");
      b_rows = inputs[1].h, b_cols = inputs[1].w;
      b_weight_ = nullptr;
    } else {
      if (weights_.empty()) return corrupt("B is neither a second input nor a weight");
      const WeightView& b = weights_[0];
      if (b.shape.size() != 2) return corrupt("B weight shape " + layer_util::join_dims(b.shape) + " is not 2-D");
      b_rows = b.shape[0], b_cols = b.shape[1];
      b_weight_ = b.data;
    }
    b_ld_ = static_cast<size_t>(b_cols);
    const int bk = trans_b_ ? b_cols : b_rows;
    const int n = trans_b_ ? b_rows : b_cols;
    if (bk != k) {
      return corrupt("op(A) is [" + std::to_string(m) + "," + std::to_string(k) + "] but op(B) is [" +
                     std::to_string(bk) + "," + std::to_string(n) + "]");
    }
    s = prepare_c(b_is_input ? 0 : 1, m, n);
    if (!s.ok()) return s;
    outputs[0] = Shape::make2(n, m);
    multiply_adds = double(m) * n * k;
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& a_mat = inputs[0];
    Mat& y = outputs[0];
    const size_t lda = static_cast<size_t>(a_mat.w);
    const Operand a{a_mat.data, trans_a_ ? 1 : lda, trans_a_ ? lda : 1};
    const Operand b{b_weight_ ? b_weight_ : inputs[1].data, trans_b_ ? 1 : b_ld_, trans_b_ ? b_ld_ : 1};
    const int m = y.h, n = y.w, k = trans_a_ ? a_mat.h : a_mat.w;
    const int blocks = (n + kColumnBlock - 1) / kColumnBlock;
    const long long tasks = static_cast<long long>(m) * blocks;
#pragma omp parallel for num_threads(ctx.num_threads)
    for (long long t = 0; t < tasks; ++t) {
      const int i = static_cast<int>(t / blocks);
      const int j0 = static_cast<int>(t % blocks) * kColumnBlock;
      const int j1 = std::min(n, j0 + kColumnBlock);
      float* row = y.row(i);
      if (trans_b_) {
        // op(B) columns are contiguous rows of B: one dot product per value.
        for (int j = j0; j < j1; ++j) {
          float sum = 0.f;
          for (int p = 0; p < k; ++p) sum += a.at(i, p) * b.at(p, j);
          row[j] = sum;
        }
      } else {
        // op(B) rows are contiguous: accumulate whole rows, still in k order per value.
        for (int j = j0; j < j1; ++j) row[j] = 0.f;
        for (int p = 0; p < k; ++p) {
          const float av = a.at(i, p);
          const float* brow = b.data + static_cast<size_t>(p) * b_ld_;
          for (int j = j0; j < j1; ++j) row[j] += av * brow[j];
        }
      }
      for (int j = j0; j < j1; ++j) {
        row[j] = alpha_ * row[j] + (c_.data ? beta_ * c_.at(static_cast<size_t>(i), static_cast<size_t>(j)) : 0.f);
      }
    }
    return Status::Ok();
  }

 private:
  // C broadcasts to [M,N] as numpy does, aligned at the innermost: [N], [1], [M,1],
  // [1,N], [M,N]. A size-1 axis gets stride 0.
  Status prepare_c(size_t index, int m, int n) {
    c_ = Operand{};
    if (weights_.size() <= index) return Status::Ok();
    const WeightView& c = weights_[index];
    int cm = 1, cn = 1;
    if (c.shape.size() == 2) cm = c.shape[0], cn = c.shape[1];
    if (c.shape.size() == 1) cn = c.shape[0];
    if ((cm != 1 && cm != m) || (cn != 1 && cn != n) || c.count != static_cast<size_t>(cm) * cn) {
      return corrupt("C of shape " + layer_util::join_dims(c.shape) + " does not broadcast to [" +
                     std::to_string(m) + "," + std::to_string(n) + "]");
    }
    c_ = Operand{c.data, cm == 1 ? 0 : static_cast<size_t>(cn), cn == 1 ? 0u : 1u};
    return Status::Ok();
  }

  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.f, beta_ = 1.f;
  std::vector<WeightView> weights_;
  // Prepared: B when it is a weight (null when it is the second input), its row
  // length, and C's broadcast view (null data when absent).
  const float* b_weight_ = nullptr;
  size_t b_ld_ = 0;
  Operand c_;
};

}  // namespace

std::unique_ptr<Layer> create_gemm_layer() { return std::make_unique<Gemm>(); }

}  // namespace kestrel
