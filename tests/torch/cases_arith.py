"""Cases for the arithmetic layers: BatchNorm, Scale, PReLU, Eltwise, BinaryOp, LRN and
Normalize.

The channel of a per-channel layer is axis 0 (C of [C,H,W], H of [H,W], W of [W]), which
is axis 1 once PyTorch's batch dimension is added. LRN within a channel and SSD's
Normalize have no PyTorch op and are composed from torch ops as the schema defines them.
"""
import functools

from kcase import Case, act, f32, np, t, torch, torch_act
from kestrel.fb.BatchNormParam import BatchNormParamT
from kestrel.fb.BinaryOpParam import BinaryOpParamT
from kestrel.fb.BinaryOpType import BinaryOpType
from kestrel.fb.EltwiseOp import EltwiseOp
from kestrel.fb.EltwiseParam import EltwiseParamT
from kestrel.fb.LRNParam import LRNParamT
from kestrel.fb.LRNRegion import LRNRegion
from kestrel.fb.NormalizeParam import NormalizeParamT
from kestrel.fb.PReLUParam import PReLUParamT
from kestrel.fb.ScaleParam import ScaleParamT

F = torch.nn.functional
ACTS = ["None", "ReLU", "LeakyReLU", "Clip", "Sigmoid", "TanH", "HardSigmoid", "HardSwish", "SiLU", "ELU", "GELU"]
ACT_ARGS = {"LeakyReLU": (0.1, 0.0), "Clip": (-0.5, 0.8), "HardSigmoid": (0.2, 0.5), "ELU": (0.7, 0.0)}
# 1-D to 4-D shapes: sizes of 1, odd sizes, channel counts off multiples of 4/8/16.
SHAPES = [(7,), (1,), (5, 9), (3, 1), (3, 5, 7), (17, 1, 1), (1, 6, 5), (13, 4, 3), (33, 2, 5), (2, 3, 4, 5),
          (5, 1, 3, 2), (9, 7, 11)]


def act_spec(name):
    return (name,) + ACT_ARGS.get(name, (0.0, 0.0))


def normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def per_channel(v, ndim):
    """A [C] tensor shaped to broadcast along axis 0 of an ndim-D blob."""
    return v.reshape((-1,) + (1,) * (ndim - 1))


# ---- BatchNorm / Scale / PReLU -------------------------------------------------

def batchnorm_cases(rng):
    cases = []
    eps_values = [1e-5, 1e-3, 0.1, 0.0]
    for i in range(26):
        shape = SHAPES[i % len(SHAPES)]
        c = shape[0]
        x = normal(rng, shape, 2.0)
        mean = normal(rng, c)
        var = rng.uniform(0.05, 3.0, c).astype(np.float32)
        gamma, beta = normal(rng, c), normal(rng, c)
        if i % 7 == 3:  # no affine part, as converters write it
            gamma, beta = np.ones(c, np.float32), np.zeros(c, np.float32)
        eps = eps_values[i % len(eps_values)]
        p = BatchNormParamT()
        p.eps = eps
        y = F.batch_norm(t(x)[None], t(mean), t(var), t(gamma), t(beta), training=False, eps=eps)[0]
        cases.append(Case("BatchNorm", p, [x], [f32(y)], [mean, var, gamma, beta], f"{shape} eps{eps}"))
    return cases


def scale_cases(rng):
    cases = []
    for i in range(24):
        shape = SHAPES[i % len(SHAPES)]
        shared = i % 4 == 1
        bias = i % 3 != 0
        n = 1 if shared else shape[0]
        x = normal(rng, shape)
        s, b = normal(rng, n), normal(rng, n)
        y = t(x) * per_channel(t(s), len(shape))
        if bias:
            y = y + per_channel(t(b), len(shape))
        p = ScaleParamT()
        p.biasTerm = bias
        cases.append(Case("Scale", p, [x], [f32(y)], [s, b] if bias else [s], f"{shape} shared{shared} bias{bias}"))
    return cases


def prelu_cases(rng):
    cases = []
    for i in range(24):
        shape = SHAPES[i % len(SHAPES)]
        shared = i % 3 == 2
        slope = normal(rng, 1 if shared else shape[0], 0.5)
        x = normal(rng, shape)
        y = F.prelu(t(x)[None], t(slope))[0]
        cases.append(Case("PReLU", PReLUParamT(), [x], [f32(y)], [slope], f"{shape} shared{shared}"))
    return cases


# ---- Eltwise ---------------------------------------------------------------------

def eltwise_cases(rng):
    cases = []
    ops = [EltwiseOp.Sum, EltwiseOp.Prod, EltwiseOp.Max]
    for i in range(27):
        shape = SHAPES[i % len(SHAPES)]
        op = ops[i % 3]
        n = [2, 3, 4, 1, 2, 5][i % 6]
        xs = [normal(rng, shape) for _ in range(n)]
        coefficients = []
        if op == EltwiseOp.Sum and i % 2 == 0:
            coefficients = [float(v) for v in rng.uniform(-2.0, 2.0, n).astype(np.float32)]
        if op == EltwiseOp.Sum:
            ks = coefficients or [1.0] * n
            y = sum(k * t(x) for k, x in zip(ks, xs))
        elif op == EltwiseOp.Prod:
            y = functools.reduce(torch.mul, [t(x) for x in xs])
        else:
            y = functools.reduce(torch.maximum, [t(x) for x in xs])
        name, alpha, beta = act_spec(ACTS[i % len(ACTS)])
        y = torch_act(name, y, alpha, beta)
        p = EltwiseParamT()
        p.op = op
        p.coefficients = coefficients
        p.activation = act(name, alpha, beta)
        op_name = ["Sum", "Prod", "Max"][op]
        cases.append(Case("Eltwise", p, xs, [f32(y)], [], f"{op_name} {n}x{shape} coef{len(coefficients)} {name}"))
    return cases


# ---- BinaryOp ------------------------------------------------------------------

BINARY = {
    BinaryOpType.Add: torch.add, BinaryOpType.Sub: torch.sub, BinaryOpType.Mul: torch.mul,
    BinaryOpType.Div: torch.div, BinaryOpType.Max: torch.maximum, BinaryOpType.Min: torch.minimum,
    BinaryOpType.Pow: torch.pow,
}
BINARY_NAMES = {v: k for k, v in vars(BinaryOpType).items() if not k.startswith("_")}


def operand(rng, shape, op, role):
    """Random values that keep each op finite: no division by ~0, positive bases for Pow
    (role "base"), moderate exponents (role "exp")."""
    if op == BinaryOpType.Pow:
        if role == "base":
            return rng.uniform(0.2, 2.0, shape).astype(np.float32)
        return rng.uniform(-2.0, 2.0, shape).astype(np.float32)
    if op == BinaryOpType.Div and role == "exp":
        return (rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)).astype(np.float32)
    return normal(rng, shape)


def binary_case(rng, op, a_shape, b_shape, source, reverse=False, act_name="None"):
    """source: "input" (second bottom), "weight" (weights[0]) or "scalar" (with_scalar).
    b_shape () with "weight" writes a shapeless weight."""
    # With reverse the layer computes b op a: the first operand of the op is b.
    a = operand(rng, a_shape, op, "exp" if reverse else "base")
    b = operand(rng, b_shape if source != "scalar" else (), op, "base" if reverse else "exp")
    lhs, rhs = (t(b), t(a)) if reverse else (t(a), t(b))
    name, alpha, beta = act_spec(act_name)
    y = torch_act(name, BINARY[op](lhs, rhs), alpha, beta)
    p = BinaryOpParamT()
    p.op, p.reverse = op, reverse
    p.activation = act(name, alpha, beta)
    inputs, weights = [a], []
    if source == "input":
        inputs.append(b)
    elif source == "weight":
        weights.append(b)
    else:
        p.withScalar, p.scalar = True, float(b)
    tag = f"{BINARY_NAMES[op]} {a_shape} {source}{b_shape if source != 'scalar' else ''} rev{reverse} {name}"
    return Case("BinaryOp", p, inputs, [f32(y)], weights, tag)


def binaryop_cases(rng):
    B = BinaryOpType
    specs = [
        # op, a shape, b shape, source, reverse, activation
        (B.Add, (5, 7, 9), (5, 7, 9), "input", False, "None"),        # same shape
        (B.Sub, (3, 4, 5), (3, 1, 1), "weight", False, "None"),       # per channel
        (B.Mul, (17, 3, 2), (17, 1, 1), "input", False, "ReLU"),
        (B.Div, (4, 6, 5), (4, 1, 1), "weight", True, "None"),        # per channel, reverse
        (B.Add, (4, 6, 5), (6, 1), "weight", False, "None"),          # per row
        (B.Mul, (3, 5, 7), (1, 5, 1), "input", False, "TanH"),        # per row
        (B.Max, (3, 5, 7), (7,), "weight", False, "None"),            # per column
        (B.Min, (2, 3, 4, 5), (3, 1, 5), "input", False, "None"),     # 4-D
        (B.Pow, (3, 4, 5), (1,), "weight", False, "None"),            # one-value weight
        (B.Pow, (3, 4, 5), (), "weight", True, "None"),               # shapeless weight, reverse
        (B.Add, (6, 2, 3), (), "scalar", False, "LeakyReLU"),         # scalar
        (B.Sub, (6, 2, 3), (), "scalar", True, "None"),               # 1 - x style
        (B.Div, (7,), (), "scalar", False, "None"),
        (B.Div, (7,), (), "scalar", True, "Sigmoid"),
        (B.Pow, (2, 9), (), "scalar", False, "None"),
        (B.Max, (5, 1, 7), (1, 6, 1), "input", False, "None"),        # both sides broadcast
        (B.Mul, (1, 4, 1), (3, 1, 5), "input", True, "None"),
        (B.Sub, (9,), (4, 3, 9), "input", False, "None"),             # b has more axes
        (B.Add, (3, 1, 1), (3, 4, 5), "input", True, "Clip"),         # output larger than input 0
        (B.Min, (4, 5), (4, 5), "weight", True, "None"),              # 2-D weight
        (B.Mul, (2, 3, 4, 5), (2, 1, 1, 1), "weight", False, "SiLU"),
        (B.Add, (1,), (1,), "input", False, "ELU"),                   # single values
        (B.Div, (13, 3, 3), (13, 3, 3), "input", False, "HardSigmoid"),
        (B.Sub, (3, 4), (1,), "input", True, "GELU"),
        (B.Pow, (5, 3), (5, 1), "input", False, "None"),
        (B.Max, (4, 2, 3), (), "scalar", True, "HardSwish"),
        (B.Min, (33, 2, 2), (), "scalar", False, "ReLU"),
    ]
    return [binary_case(rng, *spec) for spec in specs]


# ---- LRN -------------------------------------------------------------------------

def lrn_within(x, size, alpha, beta, k):
    """Caffe's WithinChannel: mean of x^2 over a size x size window, zero padded with
    size // 2 before and (size - 1) // 2 after (symmetric for odd sizes)."""
    sq = F.pad(x[None] ** 2, (size // 2, (size - 1) // 2, size // 2, (size - 1) // 2))
    mean = F.avg_pool2d(sq, size, stride=1)[0]
    return x / (k + alpha * mean) ** beta


def lrn_cases(rng):
    cases = []
    across_shapes = [(7, 5, 6), (3, 4, 4), (16, 3, 3), (1, 5, 5), (9, 1, 1), (5, 2, 3, 4), (6, 11), (20, 2, 7)]
    within_shapes = [(3, 7, 9), (2, 5, 5), (4, 1, 1), (1, 8, 6), (5, 3, 11)]
    params = [(5, 1e-4, 0.75, 1.0), (3, 0.5, 0.75, 2.0), (1, 1.0, 0.5, 1.0), (2, 0.3, 1.0, 1.0), (4, 0.1, 0.6, 0.5),
              (7, 2.0, 0.75, 1.0), (11, 1.0, 0.75, 1.0)]
    for i in range(16):
        shape = across_shapes[i % len(across_shapes)]
        size, alpha, beta, k = params[i % len(params)]
        x = normal(rng, shape, 2.0)
        y = F.local_response_norm(t(x)[None], size, alpha, beta, k)[0]
        cases.append(lrn_case(x, y, LRNRegion.AcrossChannels, size, alpha, beta, k))
    for i in range(11):
        shape = within_shapes[i % len(within_shapes)]
        size, alpha, beta, k = params[(i + 1) % len(params)]
        x = normal(rng, shape, 2.0)
        cases.append(lrn_case(x, lrn_within(t(x), size, alpha, beta, k), LRNRegion.WithinChannel, size, alpha, beta, k))
    return cases


def lrn_case(x, y, region, size, alpha, beta, k):
    p = LRNParamT()
    p.region, p.localSize, p.alpha, p.beta, p.bias = region, size, alpha, beta, k
    name = "across" if region == LRNRegion.AcrossChannels else "within"
    return Case("LRN", p, [x], [f32(y)], [], f"{name} {x.shape} n{size} a{alpha} b{beta} k{k}")


# ---- Normalize ---------------------------------------------------------------------

def normalize_cases(rng):
    cases = []
    shapes = [(8, 5, 5), (3, 20, 20), (17, 1, 1), (1, 4, 6), (5, 3, 7), (6, 9), (11,), (4, 2, 3, 5)]
    eps_values = [1e-10, 1e-5, 0.5]
    for i in range(24):
        shape = shapes[i % len(shapes)]
        across_spatial, channel_shared = bool(i % 2), bool(i // 2 % 2)
        eps = eps_values[i % 3]
        x = normal(rng, shape)
        if i % 5 == 0:  # positions where every channel is zero: x / sqrt(eps) = 0
            x[..., 0] = 0.0
        c = shape[0]
        scale = rng.uniform(0.5, 20.0, 1 if channel_shared else c).astype(np.float32)
        xt = t(x)
        sq = xt ** 2
        sums = sq.sum() if across_spatial else sq.sum(dim=0, keepdim=True)
        y = xt / torch.sqrt(sums + eps) * per_channel(t(scale), len(shape))
        p = NormalizeParamT()
        p.acrossSpatial, p.channelShared, p.eps = across_spatial, channel_shared, eps
        cases.append(Case("Normalize", p, [x], [f32(y)], [scale],
                          f"{shape} across{across_spatial} shared{channel_shared} eps{eps}"))
    return cases


def generate(rng):
    return (batchnorm_cases(rng) + scale_cases(rng) + prelu_cases(rng) + eltwise_cases(rng) + binaryop_cases(rng) +
            lrn_cases(rng) + normalize_cases(rng))
