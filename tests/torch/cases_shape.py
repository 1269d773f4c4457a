"""Cases for the data-movement layers: Slice, Split, Crop, Padding, Squeeze, Unsqueeze,
ShuffleChannel. Axes exclude the batch; odd axes are written negative so that both
conventions are exercised."""
from kcase import Case, f32, np, t, torch
from kestrel.fb.CropParam import CropParamT
from kestrel.fb.PaddingParam import PaddingParamT
from kestrel.fb.PadType import PadType
from kestrel.fb.ShuffleChannelParam import ShuffleChannelParamT
from kestrel.fb.SliceParam import SliceParamT
from kestrel.fb.SplitParam import SplitParamT
from kestrel.fb.SqueezeParam import SqueezeParamT
from kestrel.fb.UnsqueezeParam import UnsqueezeParamT

F = torch.nn.functional
INT_MAX = 2**31 - 1


def rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def signed(axis, ndim):
    """Odd axes as their negative alias."""
    return axis - ndim if axis % 2 else axis


def slice_cases(rng):
    cases = []
    for shape in [(12,), (6, 9), (6, 5, 7), (4, 6, 3, 6), (9, 1, 1), (3, 2, 4, 5)]:
        nd = len(shape)
        for a in range(nd):
            axis, n = signed(a, nd), shape[a]
            x = rand(rng, shape)
            # Equal parts: 3 or 2 when they divide the extent, else one per element.
            parts = next(k for k in (3, 2, n) if n % k == 0)
            p = SliceParamT()
            p.axis = axis
            ys = torch.split(t(x), n // parts, dim=axis)
            cases.append(Case("Slice", p, [x], [f32(y) for y in ys], [], f"{shape} axis{axis} {parts} equal"))
            if n >= 2:
                k = int(rng.integers(1, min(n - 1, 3) + 1))
                points = sorted(int(v) for v in rng.choice(np.arange(1, n), k, replace=False))
                sizes = np.diff([0] + points + [n]).tolist()
                p = SliceParamT()
                p.axis = axis
                p.points = points
                ys = torch.split(t(x), sizes, dim=axis)
                cases.append(Case("Slice", p, [x], [f32(y) for y in ys], [], f"{shape} axis{axis} points{points}"))
    return cases


def split_cases(rng):
    cases = []
    for shape, tops in [((7,), 2), ((3, 5), 3), ((5, 3, 7), 2), ((17, 2, 3), 1), ((2, 3, 4, 5), 3),
                        ((1, 1, 1), 2), ((13, 9, 11), 4), ((3, 1, 2, 7), 2), ((1,), 3), ((9, 1), 2),
                        ((24, 5, 5), 5), ((1, 1, 1, 1), 2)]:
        x = rand(rng, shape)
        cases.append(Case("Split", SplitParamT(), [x], [f32(t(x).clone()) for _ in range(tops)], [],
                          f"{shape} x{tops}"))
    return cases


def crop_caffe_cases(rng):
    """Two bottoms: bottom 0 cropped to bottom 1's extents from `axis` on."""
    specs = [  # input shape, reference shape, axis, offsets
        ((5, 8, 9), (5, 6, 5), 1, []),
        ((5, 8, 9), (5, 6, 5), 1, [2]),
        ((5, 8, 9), (5, 6, 5), -2, [1, 3]),
        ((5, 8, 9), (3, 6, 5), 0, [1, 2, 4]),
        ((5, 8, 9), (1, 1, 9), 0, [4, 7, 0]),
        ((6, 7), (6, 3), 1, [4]),
        ((6, 7), (2, 3), 0, [3]),
        ((11,), (4,), 0, [7]),
        ((3, 4, 6, 7), (3, 4, 2, 5), 2, [3, 1]),
        ((3, 4, 6, 7), (2, 3, 4, 5), -4, [1]),
    ]
    cases = []
    for shape, ref, axis, offsets in specs:
        x, r = rand(rng, shape), rand(rng, ref)
        nd = len(shape)
        first = axis % nd
        index = []
        for d in range(nd):
            if d < first:
                index.append(slice(None))
            else:
                off = 0 if not offsets else offsets[0] if len(offsets) == 1 else offsets[d - first]
                index.append(slice(off, off + ref[d]))
        p = CropParamT()
        p.axis = axis
        p.offsets = offsets
        cases.append(Case("Crop", p, [x, r], [f32(t(x)[tuple(index)])], [],
                          f"caffe {shape} to {ref} axis{axis} off{offsets}"))
    return cases


def crop_slice_cases(rng):
    """One bottom: ONNX Slice, compared with Python slicing (same clamping rules)."""
    specs = [  # shape, starts, ends, axes (None: all), steps (None: all 1)
        ((7, 8, 9), [1, 2, 3], [6, 7, 8], None, None),
        ((7, 8, 9), [2], [INT_MAX], [-1], None),
        ((7, 8, 9), [-5, 1], [-1, INT_MAX], [0, 2], [2, 3]),
        ((7, 8, 9), [0, 0], [100, -2], [-2, 0], [3, 1]),
        ((7, 8, 9), [-100], [4], [1], [2]),
        ((7, 8, 9), [1, 1, 1], [7, 8, 9], [2, 1, 0], [2, 3, 2]),
        ((10,), [3], [-2], None, [2]),
        ((10,), [-3], [INT_MAX], [0], [3]),
        ((5, 12), [0, 11], [5, 12], None, [1, 1]),
        ((5, 12), [1], [5], [-1], [3]),
        ((2, 5, 6, 7), [1, 1], [5, 7], [1, 3], [2, 2]),
        ((2, 5, 6, 7), [0, 2, 0, -4], [1, 6, 6, INT_MAX], None, [1, 1, 3, 1]),
        ((17, 3, 3), [5], [16], [0], [3]),
        ((4, 6, 6), [1, -4], [3, -1], [0, 2], None),
    ]
    cases = []
    for shape, starts, ends, axes, steps in specs:
        x = rand(rng, shape)
        nd = len(shape)
        index = [slice(None)] * nd
        for i, (b, e) in enumerate(zip(starts, ends)):
            a = (axes[i] if axes else i) % nd
            index[a] = slice(b, e, steps[i] if steps else 1)
        p = CropParamT()
        p.starts, p.ends = starts, ends
        if axes is not None:
            p.axes = axes
        if steps is not None:
            p.steps = steps
        y = t(x)[tuple(index)]
        if y.numel() == 0:
            continue  # an empty result is a model error (checked in test_layers_reshape.cpp)
        cases.append(Case("Crop", p, [x], [f32(y)], [],
                          f"slice {shape} starts{starts} ends{ends} axes{axes} steps{steps}"))
    return cases


def torch_pad(x, pads, mode, value):
    """pads in ONNX order (begins then ends, outermost first) through F.pad. Constant
    padding pads all axes at once; edge and reflect are separable, so each axis is
    padded in turn as the last axis of a 3-D (1, rest, n) tensor."""
    nd = x.dim()
    begins, ends = pads[:nd], pads[nd:]
    if mode == PadType.Constant:
        flat = []
        for a in reversed(range(nd)):
            flat += [begins[a], ends[a]]
        return F.pad(x, flat, mode="constant", value=value)
    name = {PadType.Edge: "replicate", PadType.Reflect: "reflect"}[mode]
    y = x
    for a in range(nd):
        if begins[a] == 0 and ends[a] == 0:
            continue
        y = y.movedim(a, -1)
        lead = y.shape[:-1]
        y = F.pad(y.reshape(1, -1, y.shape[-1]), (begins[a], ends[a]), mode=name)
        y = y.reshape(*lead, y.shape[-1]).movedim(-1, a)
    return y


def padding_cases(rng):
    specs = [  # shape, pads
        ((9,), [2, 3]),
        ((9,), [0, 4]),
        ((5, 7), [1, 2, 3, 0]),
        ((5, 7), [0, 3, 2, 4]),
        ((4, 5, 6), [0, 1, 2, 0, 3, 1]),
        ((4, 5, 6), [2, 0, 1, 1, 2, 3]),
        ((3, 4, 5, 6), [1, 0, 2, 1, 0, 2, 1, 3]),
        ((17, 3, 4), [0, 2, 3, 0, 1, 2]),
    ]
    cases = []
    for mode in (PadType.Constant, PadType.Edge, PadType.Reflect):
        for shape, pads in specs:
            x = rand(rng, shape)
            p = PaddingParamT()
            p.pads, p.mode = pads, mode
            p.value = 0.0 if mode != PadType.Constant else float(rng.choice([0.0, -1.5, 2.25]))
            cases.append(Case("Padding", p, [x], [f32(torch_pad(t(x), pads, mode, p.value))], [],
                              f"mode{mode} {shape} pads{pads} value{p.value}"))
    # Negative pads crop (ONNX Pad); constant mode only in PyTorch.
    for shape, pads in [((6, 7), [-1, 2, 1, -3]), ((4, 5, 6), [1, -2, 0, -1, 1, -2])]:
        x = rand(rng, shape)
        p = PaddingParamT()
        p.pads, p.value = pads, 0.5
        cases.append(Case("Padding", p, [x], [f32(torch_pad(t(x), pads, PadType.Constant, 0.5))], [],
                          f"negative {shape} pads{pads}"))
    return cases


def squeeze_cases(rng):
    specs = [  # shape, axes (None: all size-1 axes)
        ((1, 5, 1), None), ((1, 5, 1), [0]), ((1, 5, 1), [-1]), ((1, 5, 1), [0, 2]),
        ((3, 1, 4, 1), None), ((3, 1, 4, 1), [1]), ((3, 1, 4, 1), [-1, 1]), ((1, 3, 1, 7), [2]),
        ((1, 1, 1, 1), [0, 1, 2]), ((1, 1, 1), None), ((1,), None), ((7, 1), [-1]),
        ((1, 9), None), ((5, 6, 7), None), ((17, 1, 1), [1, 2]), ((2, 1, 3, 4), [-3]),
        ((1, 1, 5, 3), [0, 1]), ((1, 1, 5, 3), None), ((1, 7, 1, 1), [-1, -2]), ((6, 1, 1, 1), [-3, -1]),
    ]
    cases = []
    for shape, axes in specs:
        x = rand(rng, shape)
        y = t(x)
        if axes is None:
            y = y.squeeze()
        else:
            # torch.squeeze(dim) silently keeps a non-1 axis; the layer rejects it.
            assert all(shape[a] == 1 for a in axes), (shape, axes)
            for a in sorted((a % len(shape) for a in axes), reverse=True):
                y = y.squeeze(a)
        p = SqueezeParamT()
        if axes is not None:
            p.axes = axes
        # Removing every axis leaves the engine's 1-D [1] where PyTorch has a 0-d tensor.
        cases.append(Case("Squeeze", p, [x], [f32(y.reshape(1) if y.dim() == 0 else y)], [],
                          f"{shape} axes{axes}"))
    return cases


def unsqueeze_cases(rng):
    specs = [  # shape, axes (positions in the output)
        ((5,), [0]), ((5,), [1]), ((5,), [-1]), ((5,), [0, 1]), ((5,), [0, 2, 3]), ((5,), [-1, -3]),
        ((3, 4), [0]), ((3, 4), [1]), ((3, 4), [-1]), ((3, 4), [0, 3]), ((3, 4), [-3, 2]),
        ((3, 4, 5), [0]), ((3, 4, 5), [2]), ((3, 4, 5), [-1]), ((17, 3, 3), [1]), ((1,), [0, 1, 2]),
        ((3, 4, 5), [-4]), ((3, 4, 5), [3]), ((7,), [-1, 0, 2]), ((2, 3), [1, 2]),
    ]
    cases = []
    for shape, axes in specs:
        x = rand(rng, shape)
        out_dims = len(shape) + len(axes)
        y = t(x)
        for a in sorted(a % out_dims for a in axes):
            y = y.unsqueeze(a)
        p = UnsqueezeParamT()
        p.axes = axes
        cases.append(Case("Unsqueeze", p, [x], [f32(y)], [], f"{shape} axes{axes}"))
    return cases


def channel_shuffle(x, group):
    """ShuffleNet's channel shuffle: [g][C/g] -> [C/g][g] on the outermost axis."""
    c = x.shape[0]
    return x.reshape(group, c // group, *x.shape[1:]).transpose(0, 1).reshape(x.shape)


def shufflechannel_cases(rng):
    specs = [  # shape, group, reverse
        ((6, 3, 5), 2, False), ((6, 3, 5), 3, False), ((6, 3, 5), 2, True), ((12, 4, 4), 4, False),
        ((12, 4, 4), 3, True), ((15, 2, 3), 5, False), ((15, 2, 3), 5, True), ((9, 7, 1), 3, False),
        ((8, 5, 5), 1, False), ((8, 5, 5), 8, False), ((10, 2, 3, 4), 2, False), ((10, 2, 3, 4), 5, True),
        ((12, 9), 3, False), ((12, 9), 4, True), ((18,), 6, False), ((18,), 3, True), ((58, 3, 3), 2, False),
        ((58, 3, 3), 2, True), ((116, 2, 2), 29, False), ((21, 1, 1), 7, True),
    ]
    cases = []
    for shape, group, reverse in specs:
        x = rand(rng, shape)
        # Reversing the shuffle by g is shuffling by C / g.
        y = channel_shuffle(t(x), shape[0] // group if reverse else group)
        p = ShuffleChannelParamT()
        p.group, p.reverse = group, reverse
        cases.append(Case("ShuffleChannel", p, [x], [f32(y)], [], f"{shape} group{group} reverse{reverse}"))
    return cases


def generate(rng):
    return (slice_cases(rng) + split_cases(rng) + crop_caffe_cases(rng) + crop_slice_cases(rng) +
            padding_cases(rng) + squeeze_cases(rng) + unsqueeze_cases(rng) + shufflechannel_cases(rng))
