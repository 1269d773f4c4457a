"""Cases for Interp (F.interpolate), Reduce (torch.sum / mean / amax / amin) and Gemm
(torch.addmm / mm)."""
import itertools

from kcase import Case, f32, np, t, torch
from kestrel.fb.GemmParam import GemmParamT
from kestrel.fb.InterpMode import InterpMode
from kestrel.fb.InterpParam import InterpParamT
from kestrel.fb.ReduceOp import ReduceOp
from kestrel.fb.ReduceParam import ReduceParamT

F = torch.nn.functional


def rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def interp_cases(rng):
    # Input [C,H,W], then an output size or scales (exact in float32, so that
    # floor(in * scale) is the same in the engine and in PyTorch).
    specs = [
        ((3, 5, 7), (10, 14), None),      # 2x
        ((3, 5, 7), (3, 4), None),        # downscale
        ((4, 6, 9), (7, 5), None),        # up one axis, down the other
        ((2, 5, 7), None, (2.0, 1.5)),
        ((2, 8, 9), None, (0.5, 0.75)),
        ((5, 1, 1), (3, 4), None),        # one input pixel
        ((3, 6, 5), (1, 1), None),        # one output pixel
        ((17, 4, 6), (4, 13), None),      # height unchanged
        ((3, 9, 11), None, (0.25, 2.5)),
    ]
    cases = []
    for mode, align in [(InterpMode.Nearest, False), (InterpMode.Bilinear, False), (InterpMode.Bilinear, True)]:
        for shape, size, scale in specs:
            x = rand(rng, shape)
            p = InterpParamT()
            p.mode, p.alignCorners = mode, align
            name = "nearest" if mode == InterpMode.Nearest else "bilinear"
            kw = {"mode": name}
            if mode == InterpMode.Bilinear:
                kw["align_corners"] = align
            if size:
                p.outputH, p.outputW = size
                kw["size"] = size
            else:
                p.scaleH, p.scaleW = scale
                kw["scale_factor"] = scale
                kw["recompute_scale_factor"] = True
            # float32, as inference runs: PyTorch picks nearest pixels in float arithmetic.
            y = F.interpolate(torch.from_numpy(x)[None], **kw)[0]
            cases.append(Case("Interp", p, [x], [f32(y)], [],
                              f"{name} align{align} {shape} size{size} scale{scale}"))
    # Nearest ignores align_corners.
    x = rand(rng, (3, 5, 7))
    p = InterpParamT()
    p.mode, p.alignCorners, p.outputH, p.outputW = InterpMode.Nearest, True, 13, 11
    y = F.interpolate(torch.from_numpy(x)[None], size=(13, 11), mode="nearest")[0]
    cases.append(Case("Interp", p, [x], [f32(y)], [], "nearest align_corners set (ignored)"))
    return cases


REDUCERS = {
    ReduceOp.Sum: lambda x, dims, keep: torch.sum(x, dim=dims, keepdim=keep),
    ReduceOp.Mean: lambda x, dims, keep: torch.mean(x, dim=dims, keepdim=keep),
    ReduceOp.Max: lambda x, dims, keep: torch.amax(x, dim=dims, keepdim=keep),
    ReduceOp.Min: lambda x, dims, keep: torch.amin(x, dim=dims, keepdim=keep),
}


def reduce_cases(rng):
    specs = [  # shape, axes (None: all)
        ((7,), None), ((7,), [0]), ((4, 5), [1]), ((4, 5), [-2]), ((4, 5), None), ((3, 4, 5), [0]),
        ((3, 4, 5), [-1]), ((3, 4, 5), [1, 2]), ((3, 4, 5), [0, -1]), ((17, 3, 3), [1, 2]),
        ((2, 3, 4, 5), [0, 3]), ((2, 3, 4, 5), [-3, -2]), ((2, 3, 4, 5), [1, 2, 3]), ((2, 3, 4, 5), None),
        ((3, 4, 5), [2, 0, 1]), ((1, 6, 1), [0, 2]),
    ]
    # Each shape/axes pair with two of the eight op x keepdims combinations, in turn,
    # so that every combination meets several axis sets.
    combos = list(itertools.product(REDUCERS, (True, False)))
    cases = []
    for i, (shape, axes) in enumerate(specs):
        for op, keep in (combos[(2 * i) % 8], combos[(2 * i + 3) % 8]):
            x = rand(rng, shape)
            dims = tuple(range(len(shape))) if axes is None else tuple(axes)
            y = REDUCERS[op](t(x), dims, keep)
            p = ReduceParamT()
            p.op, p.keepdims = op, keep
            if axes is not None:
                p.axes = axes
            # Dropping every axis leaves the engine's 1-D [1] where PyTorch has a 0-d tensor.
            cases.append(Case("Reduce", p, [x], [f32(y.reshape(1) if y.dim() == 0 else y)], [],
                              f"op{op} {shape} axes{axes} keepdims{keep}"))
    return cases


def gemm_cases(rng):
    sizes = [(3, 5, 7), (1, 9, 4), (6, 1, 5), (4, 7, 70), (5, 3, 1), (2, 8, 130)]  # M, K, N
    scalars = [(1.0, 1.0), (0.5, 2.0), (-1.5, 0.25), (2.0, 0.0)]
    c_shapes = {"none": None, "[N]": lambda m, n: (n,), "[M,1]": lambda m, n: (m, 1), "[1]": lambda m, n: (1,),
                "[M,N]": lambda m, n: (m, n), "[1,N]": lambda m, n: (1, n)}
    cases = []
    combos = itertools.product([False, True], [False, True], c_shapes.items())
    for i, (ta, tb, (c_name, c_shape)) in enumerate(combos):
        m, k, n = sizes[i % len(sizes)]
        alpha, beta = scalars[i % len(scalars)]
        b_is_input = i % 3 != 1
        a = rand(rng, (k, m) if ta else (m, k))
        b = rand(rng, (n, k) if tb else (k, n))
        op_a = t(a).T if ta else t(a)
        op_b = t(b).T if tb else t(b)
        p = GemmParamT()
        p.transA, p.transB, p.alpha, p.beta = ta, tb, alpha, beta
        inputs, weights = [a], []
        if b_is_input:
            inputs.append(b)
        else:
            weights.append(b)
        if c_shape is None:
            y = alpha * torch.mm(op_a, op_b)
        else:
            c = rand(rng, c_shape(m, n))
            weights.append(c)
            y = torch.addmm(t(c), op_a, op_b, beta=beta, alpha=alpha)
        cases.append(Case("Gemm", p, inputs, [f32(y)], weights,
                          f"transA{int(ta)} transB{int(tb)} MKN{(m, k, n)} alpha{alpha} beta{beta} C{c_name} "
                          f"B{'input' if b_is_input else 'weight'}"))
    return cases


def generate(rng):
    return interp_cases(rng) + reduce_cases(rng) + gemm_cases(rng)
