"""Cases for Convolution, Pooling, InnerProduct, Activation, Softmax and Dropout."""
import math

from kcase import Case, act, f32, np, t, torch, torch_act
from kestrel.fb.ActivationParam import ActivationParamT
from kestrel.fb.ConvolutionParam import ConvolutionParamT
from kestrel.fb.DropoutParam import DropoutParamT
from kestrel.fb.InnerProductParam import InnerProductParamT
from kestrel.fb.PadMode import PadMode
from kestrel.fb.PoolingParam import PoolingParamT
from kestrel.fb.PoolType import PoolType
from kestrel.fb.RoundMode import RoundMode
from kestrel.fb.SoftmaxParam import SoftmaxParamT

F = torch.nn.functional
ACTS = ["None", "ReLU", "LeakyReLU", "Clip", "Sigmoid", "TanH", "HardSigmoid", "HardSwish", "SiLU", "ELU", "GELU"]


def random_act(rng):
    name = ACTS[rng.integers(len(ACTS))]
    alpha, beta = {"LeakyReLU": (0.1, 0.0), "Clip": (-0.5, 0.8), "HardSigmoid": (0.2, 0.5),
                   "ELU": (0.7, 0.0)}.get(name, (0.0, 0.0))
    return name, alpha, beta


def same_pads(size, k, s, d, upper):
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def conv_case(rng, c_in, h, w, c_out, kh, kw, sh, sw, dh, dw, pads, group, bias, act_name, mode=PadMode.Explicit):
    x = rng.standard_normal((c_in, h, w)).astype(np.float32)
    wt = (rng.standard_normal((c_out, c_in // group, kh, kw)) / math.sqrt(c_in // group * kh * kw)).astype(np.float32)
    b = rng.standard_normal(c_out).astype(np.float32) * 0.5
    name, alpha, beta = act_name
    if mode == PadMode.Explicit:
        top, left, bottom, right = pads
    else:
        top, bottom = same_pads(h, kh, sh, dh, mode == PadMode.SameUpper)
        left, right = same_pads(w, kw, sw, dw, mode == PadMode.SameUpper)
    xp = F.pad(t(x)[None], (left, right, top, bottom))
    y = F.conv2d(xp, t(wt), t(b) if bias else None, stride=(sh, sw), dilation=(dh, dw), groups=group)
    y = torch_act(name, y, alpha, beta)[0]
    p = ConvolutionParamT()
    p.numOutput, p.kernelH, p.kernelW, p.strideH, p.strideW = c_out, kh, kw, sh, sw
    p.dilationH, p.dilationW, p.group, p.biasTerm = dh, dw, group, bias
    p.padTop, p.padLeft, p.padBottom, p.padRight = pads if mode == PadMode.Explicit else (0, 0, 0, 0)
    p.padMode = mode
    p.activation = act(name, alpha, beta)
    weights = [wt, b] if bias else [wt]
    tag = f"{c_in}x{h}x{w}->{c_out} k{kh}x{kw} s{sh}x{sw} d{dh}x{dw} p{pads} g{group} {name} mode{mode}"
    return Case("Convolution", p, [x], [f32(y)], weights, tag)


def conv_cases(rng):
    cases = []
    # Fixed edge cases first: 1x1 spatial, 1x1 kernel, depthwise (+multiplier), stride 2.
    fixed = [
        (3, 1, 1, 5, 1, 1, 1, 1, 1, 1, (0, 0, 0, 0), 1),
        (5, 1, 1, 7, 3, 3, 1, 1, 1, 1, (1, 1, 1, 1), 1),
        (17, 9, 11, 17, 3, 3, 1, 1, 1, 1, (1, 1, 1, 1), 17),
        (17, 10, 9, 17, 3, 3, 2, 2, 1, 1, (1, 1, 1, 1), 17),
        (6, 7, 7, 12, 3, 3, 1, 1, 1, 1, (1, 1, 1, 1), 6),
        (3, 15, 13, 8, 3, 3, 2, 2, 1, 1, (1, 1, 1, 1), 1),
        (16, 8, 8, 24, 1, 1, 1, 1, 1, 1, (0, 0, 0, 0), 1),
        (9, 8, 8, 10, 1, 1, 2, 2, 1, 1, (0, 0, 0, 0), 1),
        (4, 12, 12, 6, 3, 3, 1, 1, 2, 2, (2, 2, 2, 2), 2),
        (5, 6, 9, 3, 2, 4, 1, 2, 1, 1, (0, 1, 1, 2), 1),
    ]
    for spec in fixed:
        cases.append(conv_case(rng, *spec, bias=True, act_name=("ReLU", 0, 0)))
    while len(cases) < 40:
        group = int(rng.choice([1, 1, 2, 3]))
        c_in = group * int(rng.integers(1, 7))
        c_out = group * int(rng.integers(1, 7))
        if rng.random() < 0.25:  # depthwise, maybe with a multiplier
            group = c_in = int(rng.integers(1, 20))
            c_out = c_in * int(rng.choice([1, 1, 2]))
        kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        h = int(rng.integers((kh - 1) * dh + 1, 16))
        w = int(rng.integers((kw - 1) * dw + 1, 16))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        mode = int(rng.choice([PadMode.Explicit, PadMode.Explicit, PadMode.SameUpper, PadMode.SameLower]))
        cases.append(conv_case(rng, c_in, h, w, c_out, kh, kw, sh, sw, dh, dw, pads, group,
                               bool(rng.random() < 0.7), random_act(rng), mode))
    return cases


def pool_case(rng, c, h, w, pool, k, s, pads, ceil, include_pad, global_pool=False):
    x = rng.standard_normal((c, h, w)).astype(np.float32)
    xt = t(x)[None]
    p = PoolingParamT()
    p.pool = pool
    p.global_ = global_pool  # the schema's `global` (a Python keyword)
    kh, kw = k
    sh, sw = s
    top, left, bottom, right = pads
    if global_pool:
        y = xt.amax(dim=(2, 3), keepdim=True) if pool == PoolType.Max else xt.mean(dim=(2, 3), keepdim=True)
    elif top == bottom and left == right:
        if pool == PoolType.Max:
            y = F.max_pool2d(xt, (kh, kw), (sh, sw), (top, left), ceil_mode=ceil)
        else:
            y = F.avg_pool2d(xt, (kh, kw), (sh, sw), (top, left), ceil_mode=ceil, count_include_pad=include_pad)
    else:  # asymmetric padding, floor mode: pad explicitly
        assert not ceil
        if pool == PoolType.Max:
            y = F.max_pool2d(F.pad(xt, (left, right, top, bottom), value=-math.inf), (kh, kw), (sh, sw))
        else:
            padded = F.pad(xt, (left, right, top, bottom))
            if include_pad:
                y = F.avg_pool2d(padded, (kh, kw), (sh, sw))
            else:
                mask = F.pad(torch.ones_like(xt), (left, right, top, bottom))
                y = F.avg_pool2d(padded, (kh, kw), (sh, sw)) / F.avg_pool2d(mask, (kh, kw), (sh, sw))
    p.kernelH, p.kernelW, p.strideH, p.strideW = kh, kw, sh, sw
    p.padTop, p.padLeft, p.padBottom, p.padRight = pads
    p.roundMode = RoundMode.Ceil if ceil else RoundMode.Floor
    p.countIncludePad = include_pad
    tag = f"{c}x{h}x{w} {'max' if pool == PoolType.Max else 'avg'} k{k} s{s} p{pads} ceil{ceil} incl{include_pad} global{global_pool}"
    return Case("Pooling", p, [x], [f32(y[0])], [], tag)


def pool_cases(rng):
    cases = [
        pool_case(rng, 3, 7, 7, PoolType.Average, (1, 1), (1, 1), (0, 0, 0, 0), False, True, True),
        pool_case(rng, 5, 1, 1, PoolType.Max, (1, 1), (1, 1), (0, 0, 0, 0), False, True, True),
        pool_case(rng, 17, 6, 9, PoolType.Max, (1, 1), (1, 1), (0, 0, 0, 0), False, True, True),
        pool_case(rng, 4, 13, 13, PoolType.Max, (3, 3), (2, 2), (0, 0, 0, 0), True, True),
        pool_case(rng, 4, 14, 14, PoolType.Max, (2, 2), (2, 2), (0, 0, 0, 0), False, True),
        pool_case(rng, 3, 10, 10, PoolType.Average, (3, 3), (2, 2), (1, 1, 1, 1), True, True),
        pool_case(rng, 3, 10, 10, PoolType.Average, (3, 3), (2, 2), (1, 1, 1, 1), True, False),
        pool_case(rng, 2, 9, 8, PoolType.Average, (3, 2), (2, 1), (0, 1, 2, 0), False, False),
        pool_case(rng, 2, 9, 8, PoolType.Average, (3, 2), (2, 1), (0, 1, 2, 0), False, True),
        pool_case(rng, 2, 9, 8, PoolType.Max, (3, 3), (2, 2), (1, 0, 2, 1), False, True),
    ]
    while len(cases) < 30:
        pool = int(rng.choice([PoolType.Max, PoolType.Average]))
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        ph, pw = int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))
        h, w = int(rng.integers(kh, 15)), int(rng.integers(kw, 15))
        cases.append(pool_case(rng, int(rng.integers(1, 20)), h, w, pool, (kh, kw), (sh, sw), (ph, pw, ph, pw),
                               bool(rng.random() < 0.5), bool(rng.random() < 0.5)))
    return cases


def innerproduct_cases(rng):
    cases = []
    shapes = [(1,), (7,), (33,), (3, 5), (4, 3, 3), (5, 1, 1), (17, 2, 3), (2, 2, 2, 3)]
    for i in range(16):
        shape = shapes[i % len(shapes)]
        x = rng.standard_normal(shape).astype(np.float32)
        n_in = int(np.prod(shape))
        n_out = int(rng.integers(1, 40))
        wt = (rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)).astype(np.float32)
        b = rng.standard_normal(n_out).astype(np.float32)
        bias = i % 3 != 0
        name, alpha, beta = random_act(rng)
        y = torch_act(name, F.linear(t(x).reshape(1, -1), t(wt), t(b) if bias else None), alpha, beta)[0]
        p = InnerProductParamT()
        p.numOutput, p.biasTerm, p.activation = n_out, bias, act(name, alpha, beta)
        cases.append(Case("InnerProduct", p, [x], [f32(y)], [wt, b] if bias else [wt],
                          f"{shape}->{n_out} bias{bias} {name}"))
    return cases


def activation_cases(rng):
    cases = []
    shapes = [(5,), (3, 7), (4, 5, 6), (2, 3, 4, 5), (17, 1, 1), (1, 9, 13)]
    extra = {"LeakyReLU": [(0.01, 0), (0.3, 0)], "Clip": [(0, 6), (-1, 1)], "HardSigmoid": [(0.2, 0.5), (1 / 6, 0.5)],
             "ELU": [(1.0, 0), (0.5, 0)]}
    for name in ACTS[1:]:
        for alpha, beta in extra.get(name, [(0, 0)]) * (1 if name in extra else 2):
            shape = shapes[len(cases) % len(shapes)]
            x = (rng.standard_normal(shape) * 3).astype(np.float32)
            p = ActivationParamT()
            p.activation = act(name, alpha, beta)
            y = torch_act(name, t(x), alpha, beta)
            cases.append(Case("Activation", p, [x], [f32(y)], [], f"{name} a{alpha} b{beta} {shape}"))
    return cases


def softmax_cases(rng):
    cases = []
    for shape in [(7,), (3, 5), (1, 9), (4, 5, 6), (21, 1, 1), (3, 4, 5, 6), (17, 3, 2)]:
        for axis in range(-len(shape), len(shape)):
            if len(cases) % 2 and axis >= 0 and len(shape) > 2:
                continue
            x = (rng.standard_normal(shape) * 4).astype(np.float32)
            p = SoftmaxParamT()
            p.axis = axis
            p.log = len(cases) % 3 == 0  # LogSoftmax on every third case
            y = torch.log_softmax(t(x), dim=axis) if p.log else torch.softmax(t(x), dim=axis)
            cases.append(Case("Softmax", p, [x], [f32(y)], [], f"{shape} axis{axis} log{p.log}"))
    return cases


def dropout_cases(rng):
    cases = []
    for shape in [(5,), (3, 4, 5), (2, 3, 4, 5)]:
        x = rng.standard_normal(shape).astype(np.float32)
        cases.append(Case("Dropout", DropoutParamT(), [x], [x.copy()], [], f"{shape}"))
    return cases


def generate(rng):
    return (conv_cases(rng) + pool_cases(rng) + innerproduct_cases(rng) + activation_cases(rng) +
            softmax_cases(rng) + dropout_cases(rng))
