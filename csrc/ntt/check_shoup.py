#!/usr/bin/env python3
"""Checks csrc/ntt/fr_shoup.cuh without a GPU: that it is what gen_shoup.py
writes, and that its PTX chains, run by a small interpreter of the few
instructions they use (mad.lo/hi, add, sub with and without carry, on
32-bit registers), give x * w mod r for edge cases (0, 1, 2, r - 1, r - 2,
(r - 1) / 2, 2^254) and random x, w < r, with w' both floor(w 2^288 / r)
and one less.

    python3 csrc/ntt/check_shoup.py [seed]
"""
import os, re, random, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
src = open(os.path.join(HERE, 'fr_shoup.cuh')).read()
fresh = subprocess.run([sys.executable, os.path.join(HERE, 'gen_shoup.py')], capture_output=True,
                       text=True, check=True).stdout
if fresh.rstrip() != src.rstrip():
    sys.exit('fr_shoup.cuh is stale: run python3 csrc/ntt/gen_shoup.py > csrc/ntt/fr_shoup.cuh')
body = src[src.index('void mul_lazy('):src.index('void precompute(')]  # mul_lazy, then mul
body_lazy = src[src.index('void mul_lazy('):src.index('void mul(')]
P=0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
M=0xffffffff
def run(x, w, wp, body=body):
    env = {}
    for k in range(8): env[f'x[{k}]']=(x>>(32*k))&M; env[f'w[{k}]']=(w>>(32*k))&M
    for k in range(9): env[f'wp[{k}]']=(wp>>(32*k))&M
    for k in range(17): env[f'A[{k}]']=0; env[f'B[{k}]']=0
    for k in range(8): env[f'E[{k}]']=0; env[f'O[{k}]']=0; env[f'G[{k}]']=0
    # walk statements
    stmts = re.findall(r'asm\((.*?)\);|for \(int k = 0; k < 8; \+\+k\) (\w+)\[k\] = ([^;]+);', body, re.S)
    for asm, dst, expr in stmts:
        if not asm:
            for k in range(8):
                e = expr.replace('[9 + k]', f'[{9+k}]').replace('[k]', f'[{k}]')
                if '&' in e:
                    b = env['borrow']; env[f'{dst}[{k}]'] = (env[f'E[{k}]'] & b) | (env[f's[{k}]'] & ~b & M)
                else:
                    env[f'{dst}[{k}]'] = env[e]
            continue
        parts = asm.split(':')
        text = re.findall(r'"([^"]*)"', parts[0])
        outs = re.findall(r'"\+?=?&?r"\(([^)]*)\)', parts[1])
        ins = re.findall(r'"r"\(([^)]*)\)', parts[2]) if len(parts)>2 else []
        ops = outs + ins
        cf = 0
        for t in text:
            t = t.replace('\\n\\t','').strip().rstrip(';')
            op, args = t.split(None,1)
            args=[a.strip() for a in args.split(',')]
            def val(a):
                if a.startswith('%'): return env[ops[int(a[1:])]]
                return int(a,16) if a.startswith('0x') else int(a)
            d = ops[int(args[0][1:])]
            base = op.split('.')[0]; usec = base in ('madc','addc','subc'); setc = '.cc' in op
            cin = cf if usec else 0
            if base in ('mad','madc'):
                prod = val(args[1])*val(args[2])
                part = (prod & M) if '.lo' in op else (prod>>32)
                s = part + val(args[3]) + cin
                env[d] = s & M; nc = s>>32
            elif base in ('add','addc'):
                s = val(args[1]) + val(args[2]) + cin; env[d]=s&M; nc=s>>32
            elif base in ('sub','subc'):
                s = val(args[1]) - val(args[2]) - cin; env[d]=s&M; nc = 1 if s<0 else 0
            if setc: cf = nc
    return sum(env[f'r[{k}]']<<(32*k) for k in range(8))
mu=(1<<544)//P
random.seed(int(sys.argv[1]) if len(sys.argv)>1 else 1)
cases=[]
edge=[0,1,2,P-1,P-2,(P-1)//2, 1<<254 if (1<<254)<P else 5]
for x in edge:
    for w in edge: cases.append((x,w))
for _ in range(3000): cases.append((random.randrange(P), random.randrange(P)))
bad=0
for x,w in cases:
    # precompute()'s value, the exact floor and one less (both allowed).
    for wp in {(w*mu)>>256, (w<<288)//P, max((w<<288)//P - 1, 0)}:
        r = run(x,w,wp)
        if r != x*w % P:
            bad+=1
            if bad<5: print('BAD', hex(x), hex(w), hex(r), hex(x*w%P))
# mul_lazy: any x < 2^256 (values kept below 2r), t = x * w mod r or that plus r.
lazy=[(x, w) for x in [P, P + 1, 2 * P - 1, 2 * P, (1 << 256) - 1] for w in edge]
lazy += [(random.randrange(1 << 256), random.randrange(P)) for _ in range(1000)]
for x,w in lazy:
    for wp in {(w*mu)>>256, (w<<288)//P, max((w<<288)//P - 1, 0)}:
        t = run(x, w, wp, body_lazy)
        if t % P != x*w % P or t >= 2*P:
            bad+=1
            if bad<5: print('BAD lazy', hex(x), hex(w), hex(t))
        if run(x, w, wp) != x*w % P:
            bad+=1
            if bad<5: print('BAD mul, x >= r', hex(x), hex(w))
print("cases", len(cases) + len(lazy), "x 2-3 quotients, bad", bad)
sys.exit(1 if bad else 0)
