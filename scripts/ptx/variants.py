# PTX experiment (runs 40, 43): variants of a Step 9 kernel's PTX (tirc ptx matmul --dtype ...):
#   python3 variants.py k.ptx GX   writes k_cs.ptx (st.global.cs), k_l2.ptx (cp.async .L2::128B),
#   k_sw.ptx (block swizzle: groups of 8 block rows; GX = the grid's x extent), k_all.ptx (the
#   three), k_noepi.ptx (the C stores predicated off: an upper bound on the epilogue's cost; its
#   result is wrong by design).  Time them with bench.py on the GPU machine.
import sys, re
src, gx, G = sys.argv[1], int(sys.argv[2]), 8
s = open(src).read()
def cs(t): return t.replace('\tst.global.', '\tst.global.cs.')
def l2(t): return t.replace('cp.async.cg.shared.global ', 'cp.async.cg.shared.global.L2::128B ')
def sw(t):
    y = re.search(r'\tmov.u32 \t(%r\d+), %ctaid.y;\n', t); x = re.search(r'\tmov.u32 \t(%r\d+), %ctaid.x;\n', t)
    ry, rx = y.group(1), x.group(1)
    t = t.replace(y.group(0), '').replace(x.group(0), '')
    code = f'''\t.reg .u32 %sw<8>;
\tmov.u32 %sw0, %ctaid.y;
\tmov.u32 %sw1, %ctaid.x;
\tmad.lo.u32 %sw2, %sw0, {gx}, %sw1;
\tdiv.u32 %sw3, %sw2, {G*gx};
\trem.u32 %sw4, %sw2, {G*gx};
\trem.u32 %sw5, %sw4, {G};
\tdiv.u32 {rx}, %sw4, {G};
\tmad.lo.u32 {ry}, %sw3, {G}, %sw5;
'''
    i = t.index('\tld.param')
    return t[:i] + code + t[i:]
def noepi(t):
    m = re.search(r'ld.param.u64 \t(%rd\d+), \[matmul_param_2\];', t)
    t = t.replace(m.group(0), m.group(0) + '\n\t.reg .pred %pnever;\n\tsetp.eq.u64 %pnever, ' + m.group(1) + ', 1;', 1)
    return re.sub(r'\n\tst\.global', '\n\t@%pnever st.global', t)
base = src[:-4]
for name, f in [('cs', cs), ('l2', l2), ('sw', sw), ('all', lambda t: sw(l2(cs(t)))), ('noepi', noepi)]:
    open(f'{base}_{name}.ptx', 'w').write(f(s))
