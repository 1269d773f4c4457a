"""Small TF.js graph models written from Python, one per importer feature: every op the
TF.js front end converts, with the attributes that change its meaning (SAME padding at
stride 2 on odd sizes, dilation, explicit pads, fused bias and activations, depthwise
multipliers, every resize mode, reductions with and without keep_dims, reshapes of NHWC
maps before MatMul, channel padding, broadcasting constants, integer inputs, fp16 and
uint8-quantized weights). tests/tfjs/test_tfjs_graphs.py runs each through TF.js and
Kestrel.
"""
import base64
import json

import numpy as np


def _s(text):
    return {"s": base64.b64encode(text.encode()).decode()}


def _ints(v):
    return {"list": {"i": [str(int(x)) for x in v]}}


def _strs(v):
    return {"list": {"s": [base64.b64encode(x.encode()).decode() for x in v]}}


def _dims(shape):
    return {"dim": [{"size": str(int(d))} for d in shape]}


class GraphBuilder:
    """Nodes, constants (into one weight shard) and the model.json text."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.weights, self.blobs = [], [], []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def input(self, shape, dtype="DT_FLOAT", name="x"):
        self.nodes.append({"name": name, "op": "Placeholder",
                           "attr": {"dtype": {"type": dtype}, "shape": {"shape": _dims(shape)}}})
        return name

    def const(self, value, dtype="float32", quant=None):
        value = np.asarray(value)
        name = self.name("c")
        tf_type = {"float32": "DT_FLOAT", "int32": "DT_INT32"}[dtype]
        self.nodes.append({"name": name, "op": "Const", "attr": {
            "value": {"tensor": {"dtype": tf_type, "tensorShape": _dims(value.shape)}},
            "dtype": {"type": tf_type}}})
        entry = {"name": name, "shape": [int(d) for d in value.shape], "dtype": dtype}
        flat = value.reshape(-1)
        if dtype == "int32":
            data = flat.astype("<i4").tobytes()
        elif quant == "float16":
            entry["quantization"] = {"dtype": "float16", "original_dtype": "float32"}
            data = flat.astype("<f2").tobytes()
        elif quant == "uint8":
            lo, hi = float(flat.min()), float(flat.max())
            scale = (hi - lo) / 255.0 or 1.0
            entry["quantization"] = {"dtype": "uint8", "min": lo, "scale": scale, "original_dtype": "float32"}
            data = np.clip(np.round((flat - lo) / scale), 0, 255).astype(np.uint8).tobytes()
        else:
            data = flat.astype("<f4").tobytes()
        self.weights.append(entry)
        self.blobs.append(data)
        return name

    def randn(self, shape, scale=0.5, quant=None):
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), quant=quant)

    def op(self, op, inputs, attr=None, T=True):
        name = self.name(op.strip("_").lower())
        a = dict(attr or {})
        if T:
            a.setdefault("T", {"type": "DT_FLOAT"})
        self.nodes.append({"name": name, "op": op, "input": list(inputs), "attr": a})
        return name

    def files(self, shard="w.bin"):
        model = {"format": "graph-model", "generatedBy": "kestrel tests/tfjs/graphs.py", "convertedBy": "hand",
                 "modelTopology": {"node": self.nodes, "versions": {"producer": 1}},
                 "weightsManifest": [{"paths": [shard], "weights": self.weights}]}
        return json.dumps(model, indent=1), b"".join(self.blobs)


def conv_attr(strides=(1, 1), padding="SAME", dilations=(1, 1), explicit=None, fused=None, extra=None):
    a = {"strides": _ints([1, *strides, 1]), "padding": _s(padding), "data_format": _s("NHWC"),
         "dilations": _ints([1, *dilations, 1])}
    if explicit is not None:
        a["explicit_paddings"] = _ints(explicit)
    if fused is not None:
        a["fused_ops"] = _strs(fused)
        a["num_args"] = {"i": str(len(extra or []))}
        a["epsilon"] = {"f": 0.0}
    return a


def pool_attr(k, s, padding):
    return {"ksize": _ints([1, k, k, 1]), "strides": _ints([1, s, s, 1]), "padding": _s(padding),
            "data_format": _s("NHWC")}


# ---- the cases: name -> (builder function, input shape, input dtype) ----

def fused_conv(b, x, cin, cout, k, act, strides=(1, 1), padding="SAME", depthwise=False, quant=None):
    if depthwise:
        w = b.randn([k, k, cin, cout // cin], quant=quant)
    else:
        w = b.randn([k, k, cin, cout], scale=1.0 / np.sqrt(k * k * cin), quant=quant)
    bias = b.randn([cout], quant=quant)
    fused, extra = ["BiasAdd"], [bias]
    attr = conv_attr(strides, padding, fused=fused, extra=extra)
    if act:
        fused.append(act)
        attr["fused_ops"] = _strs(fused)
        if act == "Prelu":
            extra.append(b.randn([cout], scale=0.3))
            attr["num_args"] = {"i": "2"}
        if act == "LeakyRelu":
            attr["leakyrelu_alpha"] = {"f": 0.15}
    op = "FusedDepthwiseConv2dNative" if depthwise else "_FusedConv2D"
    return b.op(op, [x, w, *extra], attr)


def case_conv_same_s2(b, x):
    return b.op("Conv2D", [x, b.randn([3, 3, 5, 7])], conv_attr((2, 2), "SAME"))


def case_conv_valid_dilated(b, x):
    return b.op("Conv2D", [x, b.randn([3, 3, 5, 6])], conv_attr((1, 1), "VALID", (2, 2)))


def case_conv_explicit(b, x):
    return b.op("Conv2D", [x, b.randn([2, 3, 5, 4])], conv_attr((1, 2), "EXPLICIT", explicit=[0, 0, 1, 2, 0, 1, 0, 0]))


def case_conv_5x5_s2_prelu(b, x):
    return fused_conv(b, x, 5, 8, 5, "Prelu", (2, 2))


def case_fused_acts(b, x):
    y = fused_conv(b, x, 5, 6, 3, "Relu6")
    y = fused_conv(b, y, 6, 6, 1, "LeakyRelu")
    y = fused_conv(b, y, 6, 6, 3, "Elu")
    return fused_conv(b, y, 6, 4, 1, "Sigmoid")


def case_depthwise(b, x):
    y = b.op("DepthwiseConv2dNative", [x, b.randn([3, 3, 5, 2])], conv_attr((2, 2), "SAME"))
    return fused_conv(b, y, 10, 10, 3, "Relu", depthwise=True)


def case_fp16_uint8_weights(b, x):
    y = fused_conv(b, x, 5, 8, 3, "Relu", quant="float16")
    return fused_conv(b, y, 8, 6, 1, None, quant="uint8")


def case_flatten_matmul(b, x):
    flat = b.op("Reshape", [x, b.const(np.array([1, -1]), "int32")], T=True)
    y = b.op("_FusedMatMul", [flat, b.randn([13 * 11 * 5, 9], 0.05), b.randn([9])],
             {"transpose_a": {"b": False}, "transpose_b": {"b": False}, "fused_ops": _strs(["BiasAdd", "Relu"]),
              "num_args": {"i": "1"}, "epsilon": {"f": 0.0}})
    return b.op("MatMul", [y, b.randn([4, 9])], {"transpose_a": {"b": False}, "transpose_b": {"b": True}})


def case_reshape_rank3(b, x):
    y = b.op("Reshape", [x, b.const(np.array([1, -1, 5]), "int32")])
    y = b.op("Sigmoid", [y])
    y = b.op("Reshape", [y, b.const(np.array([1, 11, 13, 5]), "int32")])
    return b.op("Conv2D", [y, b.randn([1, 1, 5, 3])], conv_attr())


def case_squeeze_expand_transpose(b, x):
    y = b.op("Mean", [x, b.const(np.array([3]), "int32")], {"keep_dims": {"b": False}, "Tidx": {"type": "DT_INT32"}})
    y = b.op("ExpandDims", [y, b.const(np.array([3]), "int32")])
    y = b.op("Transpose", [y, b.const(np.array([0, 2, 1, 3]), "int32")])
    y = b.op("Conv2D", [y, b.randn([3, 3, 1, 2])], conv_attr())
    y = b.op("Transpose", [y, b.const(np.array([0, 3, 1, 2]), "int32")])
    return b.op("Squeeze", [b.op("ExpandDims", [y, b.const(np.array([0]), "int32")])],
                {"squeeze_dims": _ints([0])})


def case_broadcast_consts(b, x):
    y = b.op("AddV2", [x, b.randn([5])])
    y = b.op("Mul", [b.randn([1, 1, 11, 5]), y])
    y = b.op("Sub", [b.const(np.float32(0.25)), y])
    y = b.op("RealDiv", [y, b.const((b.rng.uniform(0.5, 2, [13, 1, 5])).astype(np.float32))])
    y = b.op("Maximum", [y, b.const(np.float32(-0.3))])
    return b.op("Minimum", [b.const(np.full([5], 0.4, np.float32)), y])


def case_squeeze_excite(b, x):
    m = b.op("Mean", [x, b.const(np.array([1, 2]), "int32")], {"keep_dims": {"b": True}, "Tidx": {"type": "DT_INT32"}})
    s = fused_conv(b, m, 5, 5, 1, "Sigmoid")
    y = b.op("Mul", [x, s])
    hs = b.op("Relu6", [b.op("AddV2", [y, b.const(np.float32(3.0))])])
    return b.op("Mul", [b.op("Mul", [y, b.const(np.float32(1 / 6))]), hs])


def case_reductions(b, x):
    g = b.op("Mean", [x, b.const(np.array([1, 2]), "int32")], {"keep_dims": {"b": False}, "Tidx": {"type": "DT_INT32"}})
    p = b.op("Softmax", [g])
    mx = b.op("Max", [x, b.const(np.array([2]), "int32")], {"keep_dims": {"b": False}, "Tidx": {"type": "DT_INT32"}})
    s = b.op("Sum", [mx, b.const(np.array([-1]), "int32")], {"keep_dims": {"b": True}, "Tidx": {"type": "DT_INT32"}})
    mn = b.op("Min", [s, b.const(np.array([1]), "int32")], {"keep_dims": {"b": False}, "Tidx": {"type": "DT_INT32"}})
    return b.op("ConcatV2", [p, mn, b.const(np.array(1), "int32")], {"N": {"i": "2"}, "Tidx": {"type": "DT_INT32"}})


def case_pads(b, x):
    y = b.op("Pad", [x, b.const(np.array([[0, 0], [1, 2], [0, 1], [0, 3]]), "int32")])
    y = b.op("PadV2", [y, b.const(np.array([[0, 0], [2, 0], [1, 1], [0, 0]]), "int32"), b.const(np.float32(-0.5))])
    return b.op("MirrorPad", [y, b.const(np.array([[0, 0], [1, 1], [2, 0], [0, 0]]), "int32")], {"mode": _s("REFLECT")})


def case_concat_axes(b, x):
    a = fused_conv(b, x, 5, 3, 1, None)
    c = b.op("ConcatV2", [x, a, b.const(np.array(-1), "int32")], {"N": {"i": "2"}})
    d = b.op("ConcatV2", [c, c, b.const(np.array(1), "int32")], {"N": {"i": "2"}})
    return b.op("ConcatV2", [d, d, b.const(np.array(2), "int32")], {"N": {"i": "2"}})


def resize(b, x, op, size, align, half):
    return b.op(op, [x, b.const(np.array(size), "int32")],
                {"align_corners": {"b": align}, "half_pixel_centers": {"b": half}})


def case_resize_bilinear(b, x):
    outs = [resize(b, x, "ResizeBilinear", [20, 17], al, hp) for al, hp in ((False, True), (True, False), (False, False))]
    outs += [resize(b, x, "ResizeBilinear", [7, 6], False, hp) for hp in (True, False)]
    outs = [b.op("Mean", [o, b.const(np.array([1, 2]), "int32")], {"keep_dims": {"b": False}}) for o in outs]
    return b.op("ConcatV2", [*outs, b.const(np.array(1), "int32")], {"N": {"i": str(len(outs))}})


def case_resize_nearest(b, x):
    up = resize(b, x, "ResizeNearestNeighbor", [26, 33], False, True)
    down = resize(b, up, "ResizeNearestNeighbor", [9, 8], False, False)
    return b.op("Conv2D", [down, b.randn([1, 1, 5, 5])], conv_attr())


def case_pools(b, x):
    m = b.op("MaxPool", [x], pool_attr(3, 2, "SAME"))
    a = b.op("AvgPool", [x], pool_attr(3, 2, "SAME"))
    v = b.op("AvgPool", [x], pool_attr(2, 2, "VALID"))
    v = resize(b, v, "ResizeBilinear", [7, 6], False, True)
    return b.op("AddN", [m, a, v], {"N": {"i": "3"}})


def case_activations(b, x):
    y = b.op("FusedBatchNormV3", [x, b.randn([5]), b.randn([5]), b.randn([5]),
                                  b.const(np.abs(b.rng.standard_normal(5)).astype(np.float32) + 0.5), b.randn([5])],
             {"epsilon": {"f": 0.001}, "is_training": {"b": False}, "data_format": _s("NHWC"), "U": {"type": "DT_FLOAT"}})
    p = b.op("Prelu", [y, b.randn([1, 1, 5], 0.3)])
    e = b.op("Elu", [b.op("Tanh", [y])])
    l = b.op("LeakyRelu", [y], {"alpha": {"f": 0.1}})
    q = b.op("Square", [b.op("Neg", [l])])
    r = b.op("Rsqrt", [b.op("AddV2", [q, b.const(np.float32(1.0))])])
    s = b.op("Sqrt", [b.op("Relu", [y])])
    return b.op("AddN", [p, e, r, s], {"N": {"i": "4"}})


def case_int_input(b, x):
    f = b.op("Cast", [x], {"SrcT": {"type": "DT_INT32"}, "DstT": {"type": "DT_FLOAT"}, "Truncate": {"b": False}}, T=False)
    y = b.op("Sub", [f, b.const(np.array([120.0, 110.0, 100.0, 90.0, 80.0], np.float32))])
    y = b.op("Mul", [y, b.const(np.float32(1 / 64))])
    y = b.op("Sub", [y, b.const(np.float32(0.5))])
    return fused_conv(b, y, 5, 4, 3, "Relu6", (2, 2))


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}
INT_INPUT = {"int_input"}
INPUT_SHAPE = [1, 13, 11, 5]


def build(name, seed=0):
    """(model.json text, shard bytes, output node name, input dtype) of case `name`."""
    b = GraphBuilder(seed)
    dtype = "DT_INT32" if name in INT_INPUT else "DT_FLOAT"
    x = b.input(INPUT_SHAPE, dtype)
    out = CASES[name](b, x)
    b.nodes.append({"name": "out", "op": "Identity", "input": [out], "attr": {"T": {"type": "DT_FLOAT"}}})
    text, shard = b.files()
    return text, shard, "out", dtype
