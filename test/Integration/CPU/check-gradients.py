#!/usr/bin/env python3
"""Every differentiable tg op against central finite differences.

usage: check-gradients.py MP_GRAD_CHECK WORKDIR [SEED]

For every differentiable op, and for each op in several configurations
(broadcasting operands, non-square and batched shapes, transposes, axes,
strides), writes an f64 forward function whose loss is a random linear
functional of the op's result, L = sum(op(p0, p1, ...) * r), with every
floating-point operand a parameter (so every adjoint the op builds is
checked) and r a random input. Shapes are drawn at random from SEED (fresh
when not given; printed), and mp-grad-check draws fresh data. Each function
goes through mp-grad-check: tg-make-train-step, lowering, the JIT, and
finite differences of the compiled step. Prints one line per case; exits 1
if any gradient differs.
"""

import os
import random
import subprocess
import sys


def ty(shape, element="f64"):
    return ("tensor<" + "x".join(str(d) for d in shape) + "x" + element + ">"
            if shape else f"tensor<{element}>")


def broadcast(a, b):
    rank = max(len(a), len(b))
    a = [1] * (rank - len(a)) + list(a)
    b = [1] * (rank - len(b)) + list(b)
    return [x if y == 1 else y for x, y in zip(a, b)]


class Forward:
    """A forward function under construction."""

    def __init__(self):
        self.args, self.lines, self.n = [], [], 0

    def param(self, shape):
        name = f"p{len(self.args)}"
        self.args.append(f"%{name}: {ty(shape)} {{tg.param = \"{name}\"}}")
        return f"%{name}", list(shape)

    def input(self, shape, element="f64", role="input"):
        name = f"i{len(self.args)}"
        self.args.append(
            f"%{name}: {ty(shape, element)} {{tg.{role} = \"{name}\"}}")
        return f"%{name}", list(shape)

    def op(self, text, shape):
        self.n += 1
        v = f"%v{self.n}"
        self.lines.append(f"  {v} = {text}")
        return v, list(shape)

    def positive(self, shape):
        """A parameter kept away from 0: square(p) + 1."""
        p, _ = self.param(shape)
        s, _ = self.op(f"tg.square {p} : {ty(shape)}", shape)
        one, _ = self.op(f"tg.constant dense<1.0> : {ty([])}", [])
        return self.op(f"tg.add {s}, {one} : ({ty(shape)}, {ty([])}) -> "
                       f"{ty(shape)}", shape)

    def render(self, y, shape):
        """L = sum(y * r) for a random input r."""
        r, _ = self.input(shape)
        m, _ = self.op(f"tg.mul {y}, {r} : ({ty(shape)}, {ty(shape)}) -> "
                       f"{ty(shape)}", shape)
        axes = ", ".join(str(d) for d in range(len(shape)))
        loss, _ = self.op(f"tg.reduce_sum {m} axes = [{axes}] : "
                          f"({ty(shape)}) -> {ty([])}", [])
        return self.finish(loss)

    def finish(self, loss):
        return ("func.func @f(" + ", ".join(self.args) + ")\n"
                f"    -> ({ty([])} {{tg.loss}}) attributes {{tg.forward}} {{\n"
                + "\n".join(self.lines) + f"\n  return {loss} : {ty([])}\n}}\n")


def dims(rng, n, lo=1, hi=6):
    return [rng.randint(lo, hi) for _ in range(n)]


def binary_cases(rng):
    out = []
    for op in ["add", "sub", "mul", "div", "maximum", "minimum"]:
        full = dims(rng, 3, 2, 5)
        for label, lshape, rshape in [
                ("same shape", full, full),
                ("rhs broadcast", full, full[-1:]),
                ("both broadcast", [full[0], 1, full[2]], [full[1], 1]),
                ("scalar lhs", [], full[:2])]:
            f = Forward()
            lhs, _ = f.param(lshape)
            if op == "div":
                rhs, _ = f.positive(rshape)
            else:
                rhs, _ = f.param(rshape)
            shape = broadcast(lshape, rshape)
            y, _ = f.op(f"tg.{op} {lhs}, {rhs} : ({ty(lshape)}, {ty(rshape)})"
                        f" -> {ty(shape)}", shape)
            out.append((f"{op}, {label}", f.render(y, shape)))
    return out


def unary_cases(rng):
    out = []
    same = ["neg", "relu", "tanh", "sigmoid", "square", "sqrt", "gelu", "erf"]
    typed = ["exp", "log", "rsqrt", "sin", "cos"]
    for op in same + typed + ["gelu tanh_approx"]:
        shape = dims(rng, rng.randint(1, 3), 2, 6)
        f = Forward()
        if op in ("sqrt", "log", "rsqrt"):
            x, _ = f.positive(shape)
        else:
            x, _ = f.param(shape)
        name = op.split()[0]
        attr = " tanh_approx" if "tanh_approx" in op else ""
        if name in typed:
            text = f"tg.{name} {x} : ({ty(shape)}) -> {ty(shape)}"
        else:
            text = f"tg.{name} {x}{attr} : {ty(shape)}"
        y, _ = f.op(text, shape)
        out.append((op, f.render(y, shape)))
    # Dropout: the seed is state, so the mask is fixed while finite
    # differences vary the parameter; odd sizes end inside a Philox block.
    for rate in (0.25, 0.6):
        shape = dims(rng, 2, 3, 9)
        f = Forward()
        x, _ = f.param(shape)
        f.args.append(f"%seed: tensor<i64> {{tg.state = \"seed\", "
                      f"tg.init = dense<{rng.randrange(1 << 40)}> : tensor<i64>}}")
        y, _ = f.op(f"tg.dropout {x}, %seed rate = {rate} stream = "
                    f"{rng.randrange(100)} : ({ty(shape)}, tensor<i64>) -> "
                    f"{ty(shape)}", shape)
        out.append((f"dropout rate {rate}", f.render(y, shape)))
    return out


def softmax_norm_cases(rng):
    out = []
    for op in ["softmax", "log_softmax"]:
        shape = dims(rng, 3, 2, 6)
        axis = rng.randrange(3)
        f = Forward()
        x, _ = f.param(shape)
        y, _ = f.op(f"tg.{op} {x} axis = {axis} : ({ty(shape)}) -> "
                    f"{ty(shape)}", shape)
        out.append((f"{op}, axis {axis}", f.render(y, shape)))
    for flags in ("", " exclusive", " reverse", " exclusive reverse"):
        shape = dims(rng, 3, 2, 6)
        axis = rng.randrange(3)
        f = Forward()
        x, _ = f.param(shape)
        y, _ = f.op(f"tg.cumsum {x} axis = {axis}{flags} : ({ty(shape)}) -> "
                    f"{ty(shape)}", shape)
        out.append((f"cumsum{flags}, axis {axis}", f.render(y, shape)))
    for axis in (1, 2):
        shape = dims(rng, 3, 2, 6)
        norm = shape[axis:]
        stat = shape[:axis]
        f = Forward()
        x, _ = f.param(shape)
        g, _ = f.param(norm)
        b, _ = f.param(norm)
        f.n += 1
        y = f"%v{f.n}"
        f.lines.append(f"  {y}, %mean, %rstd = tg.layer_norm {x}, {g}, {b} "
                       f"axis = {axis} epsilon = 1.0e-05 : ({ty(shape)}, "
                       f"{ty(norm)}, {ty(norm)}) -> ({ty(shape)}, {ty(stat)},"
                       f" {ty(stat)})")
        out.append((f"layer_norm, axis {axis}", f.render(y, shape)))
    return out


def reduce_cases(rng):
    out = []
    for op in ["reduce_sum", "reduce_mean", "reduce_max"]:
        for keep in (False, True):
            shape = dims(rng, 3, 2, 6)
            axes = sorted(rng.sample(range(3), rng.randint(1, 2)))
            result = [1 if d in axes else s for d, s in enumerate(shape)
                      if keep or d not in axes]
            f = Forward()
            x, _ = f.param(shape)
            k = " keep_dims" if keep else ""
            y, _ = f.op(f"tg.{op} {x} axes = [{', '.join(map(str, axes))}]{k}"
                        f" : ({ty(shape)}) -> {ty(result)}", result)
            out.append((f"{op}, axes {axes}{k}", f.render(y, result)))
    return out


def matmul_cases(rng):
    out = []
    m, k, n, b = rng.randint(2, 7), rng.randint(2, 7), rng.randint(2, 7), \
        rng.randint(2, 4)
    configs = [
        ("plain", [m, k], [k, n], False, False),
        ("transpose lhs", [k, m], [k, n], True, False),
        ("transpose rhs", [m, k], [n, k], False, True),
        ("both transposed", [k, m], [n, k], True, True),
        ("batched activation, shared weight", [b, m, k], [k, n], False,
         False),
        ("batched activation, shared transposed weight", [b, m, k], [n, k],
         False, True),
        ("batched, transposed activation", [b, k, m], [k, n], True, False),
        ("batched both", [b, m, k], [b, k, n], False, False),
        ("broadcast batch", [1, m, k], [b, k, n], False, True),
        ("shared lhs, batched rhs", [m, k], [b, k, n], False, False),
    ]
    for label, ls, rs, tl, tr in configs:
        if label == "broadcast batch":
            rs = [b, n, k]
        f = Forward()
        lhs, _ = f.param(ls)
        rhs, _ = f.param(rs)
        batch = broadcast(ls[:-2], rs[:-2])
        shape = batch + [m, n]
        flags = (" transpose_lhs" if tl else "") + (" transpose_rhs" if tr
                                                     else "")
        y, _ = f.op(f"tg.matmul {lhs}, {rhs}{flags} : ({ty(ls)}, {ty(rs)}) ->"
                    f" {ty(shape)}", shape)
        out.append((f"matmul, {label}", f.render(y, shape)))
    return out


def movement_cases(rng):
    out = []
    shape = dims(rng, 3, 2, 5)
    perm = list(range(3))
    rng.shuffle(perm)
    f = Forward()
    x, _ = f.param(shape)
    result = [shape[p] for p in perm]
    y, _ = f.op(f"tg.transpose {x} permutation = [{', '.join(map(str, perm))}]"
                f" : ({ty(shape)}) -> {ty(result)}", result)
    out.append((f"transpose {perm}", f.render(y, result)))

    f = Forward()
    x, _ = f.param(shape)
    result = [shape[0] * shape[1], shape[2]]
    y, _ = f.op(f"tg.reshape {x} : ({ty(shape)}) -> {ty(result)}", result)
    out.append(("reshape", f.render(y, result)))

    f = Forward()
    small = [shape[1], 1]
    x, _ = f.param(small)
    result = [shape[0], shape[1], shape[2]]
    y, _ = f.op(f"tg.broadcast_to {x} : ({ty(small)}) -> {ty(result)}", result)
    out.append(("broadcast_to", f.render(y, result)))

    f = Forward()
    axis = rng.randrange(3)
    parts = []
    for _ in range(3):
        s = list(shape)
        s[axis] = rng.randint(1, 4)
        parts.append(f.param(s))
    result = list(shape)
    result[axis] = sum(s[axis] for _, s in parts)
    y, _ = f.op(f"tg.concat {', '.join(v for v, _ in parts)} axis = {axis} : "
                f"({', '.join(ty(s) for _, s in parts)}) -> {ty(result)}",
                result)
    out.append((f"concat, axis {axis}", f.render(y, result)))

    big = dims(rng, 2, 6, 10)
    for strided in (False, True):
        steps = [rng.randint(1, 3) for _ in big] if strided else [1, 1]
        offs = [rng.randint(0, 2) for _ in big]
        sizes = [max(1, (d - o - 1) // s + 1 - rng.randint(0, 1))
                 for d, o, s in zip(big, offs, steps)]
        attrs = (f"offsets = [{offs[0]}, {offs[1]}] sizes = [{sizes[0]}, "
                 f"{sizes[1]}]")
        if strided:
            attrs += f" strides = [{steps[0]}, {steps[1]}]"
        f = Forward()
        x, _ = f.param(big)
        y, _ = f.op(f"tg.slice {x} {attrs} : ({ty(big)}) -> {ty(sizes)}",
                    sizes)
        out.append((f"slice{', strided' if strided else ''}",
                    f.render(y, sizes)))
        f = Forward()
        g, _ = f.param(sizes)
        grad_attrs = f"offsets = [{offs[0]}, {offs[1]}]"
        if strided:
            grad_attrs += f" strides = [{steps[0]}, {steps[1]}]"
        y, _ = f.op(f"tg.slice_grad {g} {grad_attrs} : ({ty(sizes)}) -> "
                    f"{ty(big)}", big)
        out.append((f"slice_grad{', strided' if strided else ''}",
                    f.render(y, big)))

    f = Forward()
    rows, width = rng.randint(3, 8), rng.randint(2, 5)
    table, _ = f.param([rows, width])
    ids_shape = dims(rng, 2, 2, 5)
    ids, _ = f.input(ids_shape, "i32")
    result = ids_shape + [width]
    y, _ = f.op(f"tg.gather {table}[{ids}] : ({ty([rows, width])}, "
                f"{ty(ids_shape, 'i32')}) -> {ty(result)}", result)
    out.append(("gather (repeated ids add up)", f.render(y, result)))
    return out


def conv_cases(rng):
    """Convolutions (groups, depthwise, strides, dilations, asymmetric
    padding, both layouts), pools and batch norm, on random geometries."""
    out = []
    configs = [("conv2d", 1, False), ("conv2d, groups", 2, False),
               ("conv2d, depthwise, channels_last", 0, True),
               ("conv2d, channels_last", 1, True)]
    for name, groups, last in configs:
        while True:
            c = rng.randint(1, 3) * (groups or 1)
            g = groups or c
            c = c if groups else rng.randint(2, 4)
            g = groups or c
            o = c if not groups else rng.randint(1, 3) * g
            n, h, w = rng.randint(1, 2), rng.randint(4, 7), rng.randint(4, 7)
            kh, kw = rng.randint(1, 3), rng.randint(1, 3)
            s = [rng.randint(1, 2), rng.randint(1, 2)]
            d = [rng.randint(1, 2), rng.randint(1, 2)]
            p = [rng.randint(0, 2) for _ in range(4)]
            eh, ew = (kh - 1) * d[0] + 1, (kw - 1) * d[1] + 1
            if h + p[0] + p[2] >= eh and w + p[1] + p[3] >= ew:
                break
        oh = (h + p[0] + p[2] - eh) // s[0] + 1
        ow = (w + p[1] + p[3] - ew) // s[1] + 1
        act = (lambda ch, hh, ww: [n, hh, ww, ch] if last
               else [n, ch, hh, ww])
        f = Forward()
        x, _ = f.param(act(c, h, w))
        k, _ = f.param([o, c // g, kh, kw])
        attrs = (f"strides = {s} padding = {p} dilations = {d} groups = {g}"
                 + (" channels_last" if last else ""))
        result = act(o, oh, ow)
        y, _ = f.op(f"tg.conv2d {x}, {k} {attrs} : ({ty(act(c, h, w))}, "
                    f"{ty([o, c // g, kh, kw])}) -> {ty(result)}", result)
        out.append((name, f.render(y, result)))
    for op in ("max_pool2d", "avg_pool2d", "avg_pool2d count_include_pad"):
        last = rng.random() < 0.5
        n, c, h, w = rng.randint(1, 2), rng.randint(1, 3), rng.randint(3, 7), \
            rng.randint(3, 7)
        win = [rng.randint(1, 3), rng.randint(1, 3)]
        s = [rng.randint(1, 2), rng.randint(1, 2)]
        p = [rng.randint(0, win[0] - 1), rng.randint(0, win[1] - 1),
             rng.randint(0, win[0] - 1), rng.randint(0, win[1] - 1)]
        oh = (h + p[0] + p[2] - win[0]) // s[0] + 1
        ow = (w + p[1] + p[3] - win[1]) // s[1] + 1
        act = (lambda hh, ww: [n, hh, ww, c] if last else [n, c, hh, ww])
        name, *flags = op.split()
        f = Forward()
        x, _ = f.param(act(h, w))
        attrs = (f"window = {win} strides = {s} padding = {p}" +
                 (" channels_last" if last else "") +
                 "".join(" " + fl for fl in flags))
        y, _ = f.op(f"tg.{name} {x} {attrs} : ({ty(act(h, w))}) -> "
                    f"{ty(act(oh, ow))}", act(oh, ow))
        out.append((op, f.render(y, act(oh, ow))))
    for last in (False, True):
        n, c, h, w = 3, rng.randint(1, 4), rng.randint(2, 4), rng.randint(2, 4)
        shape = [n, h, w, c] if last else [n, c, h, w]
        flag = " channels_last" if last else ""
        f = Forward()
        x, _ = f.param(shape)
        g, _ = f.param([c])
        b, _ = f.param([c])
        rm, _ = f.input([c])
        rv, _ = f.input([c])
        f.n += 1
        y = f"%v{f.n}"
        f.lines.append(
            f"  {y}, %m, %r, %nm, %nv = tg.batch_norm {x}, {g}, {b}, {rm}, "
            f"{rv} epsilon = 1.0e-05 momentum = 1.0e-01{flag} : "
            f"({ty(shape)}, {ty([c])}, {ty([c])}, {ty([c])}, {ty([c])}) -> "
            f"({ty(shape)}, {ty([c])}, {ty([c])}, {ty([c])}, {ty([c])})")
        out.append((f"batch_norm{flag}", f.render(y, shape)))
        f = Forward()
        x, _ = f.param(shape)
        g, _ = f.param([c])
        b, _ = f.param([c])
        mean, _ = f.param([c])
        var = f.positive([c])
        y, _ = f.op(f"tg.batch_norm_inference {x}, {g}, {b}, {mean}, {var[0]} "
                    f"epsilon = 1.0e-05{flag} : ({ty(shape)}, {ty([c])}, "
                    f"{ty([c])}, {ty([c])}, {ty([c])}) -> {ty(shape)}", shape)
        out.append((f"batch_norm_inference{flag}", f.render(y, shape)))
    return out


def loss_cases(rng):
    out = []
    for rank in (2, 3):
        shape = dims(rng, rank, 2, 6)
        f = Forward()
        logits, _ = f.param(shape)
        labels, _ = f.input(shape[:-1], "i32", "label")
        loss, _ = f.op(f"tg.softmax_cross_entropy {logits}, {labels} : "
                       f"({ty(shape)}, {ty(shape[:-1], 'i32')}) -> {ty([])}",
                       [])
        out.append((f"softmax_cross_entropy, rank {rank}", f.finish(loss)))
    shape = dims(rng, 2, 2, 6)
    f = Forward()
    pred, _ = f.param(shape)
    target, _ = f.param(shape)
    loss, _ = f.op(f"tg.mse_loss {pred}, {target} : ({ty(shape)}, "
                   f"{ty(shape)}) -> {ty([])}", [])
    out.append(("mse_loss (prediction and target)", f.finish(loss)))
    return out


def mask_cases(rng):
    """tg.select by a mask that tg.compare makes of a random input: the
    gradient reaches each branch where the mask picks it."""
    out = []
    full = dims(rng, 3, 2, 5)
    for label, cshape, tshape, fshape in [
            ("same shape", full, full, full),
            ("broadcast", [full[0], 1, full[2]], full, full[-1:])]:
        f = Forward()
        x, _ = f.input(cshape)
        zero, _ = f.op(f"tg.constant dense<0.0> : {ty([])}", [])
        mask, _ = f.op(f"tg.compare gt, {x}, {zero} : ({ty(cshape)}, "
                       f"{ty([])}) -> {ty(cshape, 'i1')}", cshape)
        a, _ = f.param(tshape)
        b, _ = f.param(fshape)
        y, _ = f.op(f"tg.select {mask}, {a}, {b} : ({ty(cshape, 'i1')}, "
                    f"{ty(tshape)}, {ty(fshape)}) -> {ty(full)}", full)
        out.append((f"select, {label}", f.render(y, full)))
    return out


def main():
    tool, work = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    os.makedirs(work, exist_ok=True)
    cases = (binary_cases(rng) + unary_cases(rng) + softmax_norm_cases(rng) +
             reduce_cases(rng) + matmul_cases(rng) + movement_cases(rng) +
             conv_cases(rng) + loss_cases(rng) + mask_cases(rng))
    failed = 0
    for k, (name, text) in enumerate(cases):
        path = os.path.join(work, f"case{k}.mlir")
        with open(path, "w") as f:
            f.write(f"// {name}\n" + text)
        r = subprocess.run([tool, path, f"--seed={seed + k + 1}"],
                           capture_output=True, text=True, timeout=300)
        good = r.returncode == 0 and "gradients match" in r.stdout
        failed += not good
        print(f"{name}: {'ok' if good else 'FAIL'}")
        if not good:
            print("  " + (r.stdout + r.stderr).replace("\n", "\n  "))
    print(f"{len(cases) - failed} of {len(cases)} ops match their finite "
          f"differences")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
