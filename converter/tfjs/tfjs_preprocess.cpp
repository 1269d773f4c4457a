// The integer input's pre-processing, folded into the model's mean/norm metadata: the
// run of per-channel Add/Sub/Mul/Div by constants that starts at the input (MoveNet:
// int32 pixels -> (x - mean) / std) becomes y = (x - mean) * norm, which Kestrel's
// image path applies anyway, and the layers go.
#include <cmath>

#include "tfjs/tfjs_ops.h"

namespace kestrel::convert::tfjs_import {

Status fold_input_affine(Graph& g, const std::string& input, int channels, std::vector<float>* mean,
                         std::vector<float>* norm) {
  mean->clear();
  norm->clear();
  std::vector<double> a(static_cast<size_t>(channels), 1.0), b(static_cast<size_t>(channels), 0.0);
  std::vector<bool> remove(g.nodes.size(), false);
  std::string cur = input;
  size_t folded = 0;
  for (;;) {
    const std::vector<int> readers = g.consumers(cur);
    if (readers.size() != 1 || g.is_output(cur)) break;
    const Node& n = g.nodes[static_cast<size_t>(readers[0])];
    const fb::BinaryOpParamT* p = n.type == "BinaryOp" ? n.params.AsBinaryOpParam() : nullptr;
    if (!p || n.inputs.size() != 1 || (p->activation && p->activation->type != fb::ActivationType::None)) break;
    std::vector<double> k(static_cast<size_t>(channels));
    if (p->with_scalar) {
      k.assign(k.size(), p->scalar);
    } else if (n.weights.size() == 1 && n.weights[0].data.size() == 1) {
      k.assign(k.size(), n.weights[0].data[0]);
    } else if (n.weights.size() == 1 && n.weights[0].shape == std::vector<int>{channels, 1, 1}) {
      k.assign(n.weights[0].data.begin(), n.weights[0].data.end());
    } else {
      break;
    }
    const fb::BinaryOpType op = p->op;
    if (op == fb::BinaryOpType::Div && p->reverse) break;
    if (op != fb::BinaryOpType::Add && op != fb::BinaryOpType::Sub && op != fb::BinaryOpType::Mul &&
        op != fb::BinaryOpType::Div) {
      break;
    }
    for (size_t c = 0; c < k.size(); ++c) {
      switch (op) {
        case fb::BinaryOpType::Add: b[c] += k[c]; break;
        case fb::BinaryOpType::Sub:
          if (p->reverse) a[c] = -a[c], b[c] = k[c] - b[c];
          else b[c] -= k[c];
          break;
        case fb::BinaryOpType::Mul: a[c] *= k[c], b[c] *= k[c]; break;
        default: a[c] /= k[c], b[c] /= k[c]; break;
      }
    }
    remove[static_cast<size_t>(readers[0])] = true;
    cur = n.outputs[0];
    ++folded;
  }
  if (folded == 0) return Status::Ok();
  for (size_t c = 0; c < a.size(); ++c) {
    if (!(a[c] != 0.0) || !std::isfinite(a[c]) || !std::isfinite(b[c])) return Status::Ok();  // not invertible
  }
  g.erase_nodes(remove);
  g.replace_uses(cur, input);
  for (size_t c = 0; c < a.size(); ++c) {
    mean->push_back(static_cast<float>(-b[c] / a[c]));
    norm->push_back(static_cast<float>(a[c]));
  }
  return Status::Ok();
}

}  // namespace kestrel::convert::tfjs_import
