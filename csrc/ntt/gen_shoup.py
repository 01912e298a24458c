#!/usr/bin/env python3
"""Writes csrc/ntt/fr_shoup.cuh: Shoup's multiplication by a precomputed
constant for BLS12-381 Fr, as PTX carry chains (one asm statement a chain).

    python3 csrc/ntt/gen_shoup.py > csrc/ntt/fr_shoup.cuh

The output is committed; rerun this after changing it, then
csrc/ntt/check_shoup.py (no GPU needed) checks the header against this
script and runs its chains on edge and random cases. The chains are
regular but every row has its own length, which is why they are generated
rather than written by hand.

Algorithm (V. Shoup, NTL's MulModPrecon; D. Harvey, "Faster arithmetic for
number-theoretic transforms", J. Symbolic Computation 60, 2014, section 2),
with beta = 2^288 and W = 2^32:
    w'  = floor(w * beta / r)  (or one less), 9 limbs, precomputed per w
    q   = floor(x * w' / beta), from the partial products at columns >= 8
          only (the dropped ones move q down by at most 1)
    t   = x * w - q * r  (mod 2^256), then t - r if t >= r (mul; mul_lazy
          stops before this step: t < 2r).
For any x < 2^256: x*w/r - x*w'/beta < 2x/beta < 2^-31 and the dropped parts
sum to below 24 * 2^256 < 2^-27 * beta, so q is floor(x*w/r) or one less
and t < 2r < 2^256 is exact mod 2^256. The result is x*w mod r for
any representation of x: with x in Montgomery form (x R) and w plain,
the product is x*w in Montgomery form.
"""

P = [0x00000001, 0xFFFFFFFF, 0xFFFE5BFE, 0x53BDA402,
     0x09A1D805, 0x3339D808, 0x299D7D48, 0x73EDA753]
R = sum(v << (32 * i) for i, v in enumerate(P))
MU = (1 << 544) // R  # floor(2^544 / r), 290 bits
assert P[0] == 1 and P[1] == 0xFFFFFFFF


class Chain:
    """One asm statement: a carry chain of mad.lo/mad.hi/add instructions."""

    def __init__(self):
        self.ins = []  # (op, dst, a, b) ; dst is an lvalue expression

    def emit(self, out, indent="    "):
        if not self.ins:
            return
        outs, ins_ = [], []

        def num(expr, rw):
            if expr.startswith("0x") or expr == "0":
                return expr
            lst = outs if rw else ins_
            if expr not in lst:
                lst.append(expr)
            return expr

        # Register every operand first so that numbering is stable.
        for op, dst, a, b in self.ins:
            num(dst, True)
        for op, dst, a, b in self.ins:
            for v in (a, b):
                if v is not None and v not in outs:
                    num(v, False)
        index = {e: i for i, e in enumerate(outs)}
        index.update({e: len(outs) + i for i, e in enumerate(ins_)})

        def ref(e):
            return e if (e.startswith("0x") or e == "0") else "%" + str(index[e])

        n = len(self.ins)
        text = []
        for k, (op, dst, a, b) in enumerate(self.ins):
            first, last = k == 0, k == n - 1
            cc = "" if last else ".cc"
            if op in ("lo", "hi"):
                name = ("mad" if first else "madc") + "." + op + cc + ".u32"
                text.append(f"{name} {ref(dst)}, {ref(b)}, {ref(a)}, {ref(dst)};")
            elif op == "add":
                name = ("add" if first else "addc") + cc + ".u32"
                text.append(f"{name} {ref(dst)}, {ref(dst)}, {ref(a)};")
            elif op == "sub":
                name = ("sub" if first else "subc") + cc + ".u32"
                text.append(f"{name} {ref(dst)}, {ref(dst)}, {ref(a)};")
            else:
                raise ValueError(op)
        out.append(indent + "asm(")
        for k, t in enumerate(text):
            sep = "\\n\\t" if k < n - 1 else ""
            out.append(indent + f'    "{t}{sep}"')
        o = ", ".join(f'"+&r"({e})' for e in outs)
        i = ", ".join(f'"r"({e})' for e in ins_)
        out.append(indent + f"    : {o}")
        out.append(indent + f"    : {i});" if ins_ else indent + "    :);")


def row(acc, scal, mults, col0, top, carry, hi_first=False):
    """acc[col0 + 2t], acc[col0 + 2t + 1] += lo, hi of scal * mults[t];
    columns above top are dropped; carry: propagate the final carry into
    the column after the last one written (which must not overflow);
    hi_first: drop the lo half of the first product."""
    ch = Chain()
    last = None
    for t, m in enumerate(mults):
        c = col0 + 2 * t
        if c > top:
            break
        if not (hi_first and t == 0):
            ch.ins.append(("lo", f"{acc}[{c}]", m, scal))
        last = c
        if c + 1 <= top:
            ch.ins.append(("hi", f"{acc}[{c + 1}]", m, scal))
            last = c + 1
    if carry and last is not None and last + 1 <= top:
        ch.ins.append(("add", f"{acc}[{last + 1}]", "0", None))
    return ch


def low_product(even, odd, scal, mults, rows, j0):
    """Chains of sum_i scal_i * m_j mod 2^256 over j >= j0, i + j <= 7:
    products at even columns into `even`, at odd columns into `odd`, so a
    register pair keeps its alignment in every row (row i's products with
    j of i's parity land at even columns). mults(j) names multiplicand j."""
    chains = []
    for i in range(rows):
        for acc, par in ((even, 0), (odd, 1)):
            js = [j for j in range(j0, 8 - i) if (i + j) % 2 == par]
            if js:
                chains.append(row(acc, scal(i), [mults(j) for j in js], i + js[0], 7, False))
    return chains


def add_chain(dst, src, lo, hi, op="add", src_off=0):
    """dst[k] op= src[k - src_off] for k in lo..hi (one chain)."""
    ch = Chain()
    for k in range(lo, hi + 1):
        ch.ins.append((op, f"{dst}[{k}]", f"{src}[{k - src_off}]", None))
    return ch


def main():
    out = []
    out.append("/* GENERATED by csrc/ntt/gen_shoup.py: do not edit; rerun it instead.")
    out.append(" *")
    for line in __doc__.strip().splitlines()[5:]:
        out.append((" * " + line).rstrip())
    out.append(" */")
    out.append("#ifndef CUZK_NTT_FR_SHOUP_CUH")
    out.append("#define CUZK_NTT_FR_SHOUP_CUH")
    out.append("")
    out.append("#include <stdint.h>")
    out.append("")
    out.append("namespace cuzk {")
    out.append("namespace shoup {")
    out.append("")
    mu = ", ".join(f"0x{(MU >> (32 * i)) & 0xFFFFFFFF:08x}u" for i in range(10))
    out.append("/* floor(2^544 / r), 10 limbs: w' = floor(w * mu / 2^256) is")
    out.append(" * floor(w * 2^288 / r) or one less (see precompute). */")
    out.append(f"__device__ constexpr uint32_t kMu[10] = {{{mu}}};")
    out.append("")
    out.append("/* t = x * w mod r or that plus r (t < 2r < 2^256), for any x < 2^256 and")
    out.append(" * w < r (plain), wp = precompute(w): the product without its final")
    out.append(" * conditional subtraction, for callers that keep values below 2r. */")
    out.append("__device__ __forceinline__ void mul_lazy(uint32_t (&r)[8], const uint32_t (&x)[8],")
    out.append("                                         const uint32_t (&w)[8], const uint32_t (&wp)[9]) {")
    body = []
    # (A) q = columns 9..16 of x * wp, from the partial products at columns
    # >= 8 (of the pairs at column 7 only the high halves, IMAD.HI).
    body.append("uint32_t A[17] = {0}, B[17] = {0};")
    chains = []
    for i in range(8):
        j0 = 7 - i
        a_js = list(range(j0, 9, 2))      # columns 7, 8 | 9, 10 | ...
        b_js = list(range(j0 + 1, 9, 2))  # columns 8, 9 | ...
        # The chain holding j = 8 ends in an untouched column: no carry out.
        chains.append(row("A", f"x[{i}]", [f"wp[{j}]" for j in a_js], 7, 16,
                          carry=bool(a_js) and a_js[-1] != 8, hi_first=True))
        if b_js:
            chains.append(row("B", f"x[{i}]", [f"wp[{j}]" for j in b_js], 8, 16,
                              carry=b_js[-1] != 8))
    chains.append(add_chain("A", "B", 8, 16))
    # (B) T = x * w mod 2^256 into E (even columns) and O (odd columns).
    body_b = ["uint32_t E[8] = {0}, O[8] = {0};"]
    chains_b = low_product("E", "O", lambda i: f"x[{i}]", lambda j: f"w[{j}]", 8, 0)
    chains_b.append(add_chain("E", "O", 1, 7))
    # (C) S = q * r mod 2^256: q (r[0] = 1) + q << 64 - q << 32 (r[1] = W - 1)
    # + the products with r[j], j >= 2.
    body_c = ["uint32_t F[8], G[8] = {0};",
              "for (int k = 0; k < 8; ++k) F[k] = q[k];"]
    chains_c = low_product("F", "G", lambda i: f"q[{i}]", lambda j: f"0x{P[j]:08x}", 6, 2)
    chains_c.append(add_chain("F", "G", 3, 7))
    chains_c.append(add_chain("F", "q", 2, 7, src_off=2))
    chains_c.append(add_chain("F", "q", 1, 7, op="sub", src_off=1))
    # t = T - S; then t - r if t >= r.
    chains_d = [add_chain("E", "F", 0, 7, op="sub")]

    lines = []
    lines += ["    " + b for b in body]
    for c in chains:
        c.emit(lines)
    lines.append("    uint32_t q[8];")
    lines.append("    for (int k = 0; k < 8; ++k) q[k] = A[9 + k];")
    lines += ["    " + b for b in body_b]
    for c in chains_b:
        c.emit(lines)
    lines += ["    " + b for b in body_c]
    for c in chains_c:
        c.emit(lines)
    for c in chains_d:
        c.emit(lines)
    lines.append("    for (int k = 0; k < 8; ++k) r[k] = E[k];")
    out += lines
    out.append("}")
    out.append("")
    out.append("/* x * w mod r (t < r) for x < 2^256, w < r (plain), wp = precompute(w). */")
    out.append("__device__ __forceinline__ void mul(uint32_t (&r)[8], const uint32_t (&x)[8],")
    out.append("                                    const uint32_t (&w)[8], const uint32_t (&wp)[9]) {")
    lines = ["    uint32_t E[8];", "    mul_lazy(E, x, w, wp);"]
    lines.append("    uint32_t s[8];")
    lines.append("    for (int k = 0; k < 8; ++k) s[k] = E[k];")
    lines.append("    uint32_t borrow;")
    # s = t - r, and the borrow as a mask (subc of 0 - 0 - borrow).
    lines.append("    asm(\"sub.cc.u32 %0, %0, 0x00000001;\\n\\t\"")
    for k in range(1, 8):
        lines.append(f"        \"subc.cc.u32 %{k}, %{k}, 0x{P[k]:08x};\\n\\t\"")
    lines.append("        \"subc.u32 %8, 0, 0;\"")
    lines.append("        : " + ", ".join(f'"+&r"(s[{k}])' for k in range(8)) + ', "=r"(borrow));')
    lines.append("    for (int k = 0; k < 8; ++k) r[k] = (E[k] & borrow) | (s[k] & ~borrow);")
    out += lines
    out.append("}")
    out.append("")
    out.append("/* w' = floor(w * kMu / 2^256) for plain w < r: floor(w * 2^288 / r) or")
    out.append(" * one less (kMu is at most 1 below 2^544 / r, so w * kMu / 2^256 is")
    out.append(" * less than 1 below w * 2^288 / r). Plain 64-bit schoolbook: once per")
    out.append(" * root, not on the hot path. */")
    out.append("__device__ __forceinline__ void precompute(uint32_t (&wp)[9], const uint32_t (&w)[8]) {")
    out.append("    uint32_t t[18] = {0};")
    out.append("    for (int i = 0; i < 8; ++i) {")
    out.append("        uint64_t c = 0;")
    out.append("        for (int j = 0; j < 10; ++j) {")
    out.append("            const uint64_t s = (uint64_t)w[i] * kMu[j] + t[i + j] + c;")
    out.append("            t[i + j] = (uint32_t)s;")
    out.append("            c = s >> 32;")
    out.append("        }")
    out.append("        t[i + 10] = (uint32_t)c;")
    out.append("    }")
    out.append("    for (int k = 0; k < 9; ++k) wp[k] = t[8 + k];")
    out.append("}")
    out.append("")
    out.append("}  // namespace shoup")
    out.append("}  // namespace cuzk")
    out.append("")
    out.append("#endif  // CUZK_NTT_FR_SHOUP_CUH")
    print("\n".join(out))


if __name__ == "__main__":
    main()
