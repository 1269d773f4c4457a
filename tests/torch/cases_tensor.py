"""Cases for the layout layers: Concat, Flatten, Reshape, Permute."""
import itertools

from kcase import Case, f32, np, t, torch
from kestrel.fb.ConcatParam import ConcatParamT
from kestrel.fb.FlattenParam import FlattenParamT
from kestrel.fb.PermuteParam import PermuteParamT
from kestrel.fb.ReshapeParam import ReshapeParamT


def concat_cases(rng):
    cases = []
    for shape in [(5,), (3, 4), (4, 3, 5), (2, 3, 2, 4), (17, 1, 1)]:
        for axis in range(-len(shape), len(shape)):
            n = int(rng.integers(2, 5))
            parts = []
            for _ in range(n):
                s = list(shape)
                s[axis] = int(rng.integers(1, 6))
                parts.append(rng.standard_normal(s).astype(np.float32))
            p = ConcatParamT()
            p.axis = axis
            y = torch.cat([t(x) for x in parts], dim=axis)
            cases.append(Case("Concat", p, parts, [f32(y)], [], f"{n} x {shape} axis{axis}"))
    return cases


def flatten_cases(rng):
    cases = []
    for shape in [(5,), (3, 7), (4, 5, 6), (17, 3, 3), (2, 3, 4, 5), (1, 1, 1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        cases.append(Case("Flatten", FlattenParamT(), [x], [x.reshape(-1)], [], f"{shape}"))
    return cases


def reshape_cases(rng):
    specs = [((4, 6, 5), [-1, 5]), ((4, 6, 5), [0, -1]), ((4, 6, 5), [120]), ((4, 6, 5), [2, 2, 30]),
             ((120,), [4, 3, 10]), ((3, 7), [7, 3]), ((2, 3, 4, 5), [6, -1]), ((6, 4), [2, 3, 2, 2]),
             ((5, 3, 3), [0, 9]), ((5, 3, 3), [0, 1, 3, 3]), ((17, 1, 1), [17]), ((2, 3, 4), [-1])]
    cases = []
    for shape, target in specs:
        x = rng.standard_normal(shape).astype(np.float32)
        resolved = [shape[i] if v == 0 else v for i, v in enumerate(target)]
        p = ReshapeParamT()
        p.shape = target
        cases.append(Case("Reshape", p, [x], [x.reshape(resolved)], [], f"{shape}->{target}"))
    return cases


def permute_cases(rng):
    cases = []
    for shape in [(3, 5), (2, 3, 4), (17, 5, 3), (2, 3, 4, 5)]:
        perms = list(itertools.permutations(range(len(shape))))
        if len(shape) == 4:
            perms = [perms[i] for i in rng.choice(len(perms), 8, replace=False)]
        for order in perms:
            x = rng.standard_normal(shape).astype(np.float32)
            p = PermuteParamT()
            p.order = list(order)
            cases.append(Case("Permute", p, [x], [np.transpose(x, order)], [], f"{shape} {order}"))
    return cases


def generate(rng):
    return concat_cases(rng) + flatten_cases(rng) + reshape_cases(rng) + permute_cases(rng)
