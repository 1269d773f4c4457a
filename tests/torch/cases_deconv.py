"""Cases for Deconvolution (PyTorch's ConvTranspose2d).

Symmetric pads go straight to F.conv_transpose2d with padding/output_padding; the
schema's asymmetric pads have no PyTorch argument, so those cases take the unpadded
transposed convolution, append output_pad - pad_end zero rows/columns where the
output padding reaches past it, and crop pad_begin from the front (which is what
padding/output_padding do in the symmetric case).
"""
import math

from kcase import Case, act, f32, np, t, torch, torch_act
from kestrel.fb.ConvolutionParam import ConvolutionParamT

F = torch.nn.functional
ACTS = ["None", "ReLU", "LeakyReLU", "Clip", "Sigmoid", "TanH", "HardSigmoid", "HardSwish", "SiLU", "ELU", "GELU"]
ACT_ARGS = {"LeakyReLU": (0.1, 0.0), "Clip": (-0.5, 0.8), "HardSigmoid": (0.2, 0.5), "ELU": (0.7, 0.0)}


def full_extent(size, k, s, d):
    return (size - 1) * s + d * (k - 1) + 1


def deconv_reference(x, wt, b, stride, dilation, pads, out_pad, group):
    """Expected output of one Deconvolution (without activation), float64."""
    top, left, bottom, right = pads
    sh, sw = stride
    oph, opw = out_pad
    xt, wt_t = t(x)[None], t(wt)
    bt = t(b) if b is not None else None
    if top == bottom and left == right:
        return F.conv_transpose2d(xt, wt_t, bt, stride=stride, padding=(top, left), output_padding=out_pad,
                                  groups=group, dilation=dilation)[0]
    y = F.conv_transpose2d(xt, wt_t, None, stride=stride, groups=group, dilation=dilation)
    full_h, full_w = y.shape[2], y.shape[3]
    out_h, out_w = full_h - top - bottom + oph, full_w - left - right + opw
    y = F.pad(y, (0, max(0, opw - right), 0, max(0, oph - bottom)))
    y = y[:, :, top:top + out_h, left:left + out_w]
    if bt is not None:
        y = y + bt.reshape(1, -1, 1, 1)
    return y[0]


def deconv_case(rng, c_in, h, w, c_out, k, stride, dilation, pads, out_pad, group, bias, act_spec):
    kh, kw = k
    x = rng.standard_normal((c_in, h, w)).astype(np.float32)
    fan = c_in // group * kh * kw
    wt = (rng.standard_normal((c_in, c_out // group, kh, kw)) / math.sqrt(fan)).astype(np.float32)
    b = (rng.standard_normal(c_out) * 0.5).astype(np.float32)
    name, alpha, beta = act_spec
    y = deconv_reference(x, wt, b if bias else None, stride, dilation, pads, out_pad, group)
    y = torch_act(name, y, alpha, beta)
    p = ConvolutionParamT()
    p.numOutput, p.kernelH, p.kernelW = c_out, kh, kw
    p.strideH, p.strideW = stride
    p.dilationH, p.dilationW = dilation
    p.padTop, p.padLeft, p.padBottom, p.padRight = pads
    p.outputPadH, p.outputPadW = out_pad
    p.group, p.biasTerm = group, bias
    p.activation = act(name, alpha, beta)
    tag = (f"{c_in}x{h}x{w}->{c_out} k{kh}x{kw} s{stride[0]}x{stride[1]} d{dilation[0]}x{dilation[1]} "
           f"p{pads} op{out_pad} g{group} bias{bias} {name}")
    return Case("Deconvolution", p, [x], [f32(y)], [wt, b] if bias else [wt], tag)


def random_act(rng):
    name = ACTS[rng.integers(len(ACTS))]
    return (name,) + ACT_ARGS.get(name, (0.0, 0.0))


def random_case(rng):
    group = int(rng.choice([1, 1, 2, 3]))
    c_in = group * int(rng.integers(1, 6))
    c_out = group * int(rng.integers(1, 6))
    if rng.random() < 0.25:  # depthwise, with or without a channel multiplier
        group = c_in = int(rng.integers(1, 14))
        c_out = c_in * int(rng.choice([1, 2, 3]))
    kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    h, w = int(rng.integers(1, 10)), int(rng.integers(1, 10))
    # PyTorch's rule: output padding below the stride or the dilation.
    oph = int(rng.integers(0, max(sh, dh)))
    opw = int(rng.integers(0, max(sw, dw)))
    fh, fw = full_extent(h, kh, sh, dh), full_extent(w, kw, sw, dw)
    pads = [int(v) for v in rng.integers(0, 3, 4)]
    # Keep at least one output row and column.
    while fh - pads[0] - pads[2] + oph < 1:
        pads[int(rng.integers(0, 2)) * 2] = 0
    while fw - pads[1] - pads[3] + opw < 1:
        pads[1 + int(rng.integers(0, 2)) * 2] = 0
    return deconv_case(rng, c_in, h, w, c_out, (kh, kw), (sh, sw), (dh, dw), tuple(pads), (oph, opw), group,
                       bool(rng.random() < 0.7), random_act(rng))


def generate(rng):
    relu = ("ReLU", 0.0, 0.0)
    none = ("None", 0.0, 0.0)
    # c_in, h, w, c_out, k, stride, dilation, pads (t, l, b, r), out_pad, group, bias, act
    fixed = [
        (3, 1, 1, 5, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), (0, 0), 1, True, none),         # 1x1 everything
        (4, 1, 1, 6, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), (0, 0), 1, True, relu),         # 1x1 input
        (5, 7, 9, 7, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), (0, 0), 1, True, none),         # same-size
        (3, 5, 6, 4, (4, 4), (2, 2), (1, 1), (1, 1, 1, 1), (0, 0), 1, True, relu),         # classic 2x upsample
        (6, 4, 5, 5, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (1, 1), 1, False, none),        # output_pad
        (2, 6, 5, 3, (3, 3), (3, 3), (1, 1), (1, 1, 1, 1), (2, 1), 1, True, none),         # stride 3 + out pad
        (4, 5, 7, 6, (3, 2), (2, 3), (1, 1), (0, 1, 2, 0), (0, 0), 1, True, relu),         # asymmetric pads
        (3, 6, 6, 2, (3, 3), (2, 2), (1, 1), (2, 0, 0, 1), (1, 1), 1, True, none),         # asym + out pad
        (3, 4, 4, 3, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), (1, 0), 1, True, none),         # out pad past the span
        (4, 6, 5, 4, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), (0, 0), 1, True, none),         # dilation
        (3, 5, 5, 5, (3, 2), (2, 1), (2, 3), (1, 0, 1, 0), (1, 2), 1, True, relu),         # dilation + out pad < dil
        (6, 5, 6, 9, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (1, 1), 3, True, none),         # groups
        (8, 4, 4, 4, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), (0, 0), 2, False, relu),        # groups, opg 2
        (17, 5, 6, 17, (4, 4), (2, 2), (1, 1), (1, 1, 1, 1), (0, 0), 17, True, none),      # depthwise
        (7, 4, 5, 14, (3, 3), (2, 2), (1, 1), (1, 0, 1, 2), (1, 1), 7, True, relu),        # depthwise x2, asym
        (1, 9, 1, 1, (3, 1), (2, 1), (1, 1), (1, 0, 1, 0), (1, 0), 1, True, none),         # single column
        (5, 3, 11, 1, (1, 5), (1, 3), (1, 1), (0, 2, 0, 2), (0, 2), 1, False, none),       # one output channel
        (2, 3, 3, 3, (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), (0, 0), 1, True, none),         # pads crop to input size
        (2, 3, 4, 3, (5, 5), (1, 1), (1, 1), (3, 1, 3, 2), (0, 0), 1, True, none),         # heavy asymmetric crop
        (19, 3, 4, 13, (2, 3), (3, 2), (1, 1), (0, 0, 0, 0), (2, 1), 1, True, ("HardSwish", 0.0, 0.0)),
    ]
    cases = [deconv_case(rng, *spec) for spec in fixed]
    for name in ACTS[1:]:  # every fused activation once
        cases.append(deconv_case(rng, 3, 4, 5, 5, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (1, 1), 1, True,
                                 (name,) + ACT_ARGS.get(name, (0.0, 0.0))))
    while len(cases) < 44:
        cases.append(random_case(rng))
    return cases
