# Probe (eighteenth session): which PTX patterns does the PTX assembler's optimiser get wrong?
# Small kernels, each one pattern on a run-time input, JIT-compiled by the driver at -O0 and -O4
# (jitprobe.py's loader); a row whose -O4 value differs from -O0 (= the PTX's meaning, as
# expected) isolates a miscompiled pattern.  Results: docs/reliability.md.
# usage: python3 ptxas_matrix.py   (on the GPU machine)
import os, struct, sys
sys.argv = sys.argv[:1] + ["/nonexistent"]
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "jitprobe.py")).read().split("d = sys.argv[1]")[0])

HEAD = """.version 7.8
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
  .reg .pred %p<8>; .reg .b16 %h<16>; .reg .b32 %r<16>; .reg .f32 %f<8>; .reg .f64 %d<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pin]; ld.param.u64 %rd2, [pout];
  ld.global.u32 %r1, [%rd1]; ld.global.f32 %f1, [%rd1+4]; ld.global.u32 %r2, [%rd1+8];
  cvt.u16.u32 %h1, %r1; mov.b32 %r3, %f1; cvt.u16.u32 %h12, %r2;
  setp.le.f32 %p1, %f1, 0f000116C2;
  setp.num.f32 %p2, %f1, %f1;
"""
TAIL = "  ret;\n}\n"
def st16(i, h): return f"  cvt.s32.s16 %r{10+i}, {h}; st.global.s32 [%rd2+{4*i}], %r{10+i};\n"
def st32(i, r): return f"  st.global.s32 [%rd2+{4*i}], {r};\n"
def stp(i, p): return f"  selp.b32 %r{10+i}, 1, 0, {p}; st.global.s32 [%rd2+{4*i}], %r{10+i};\n"

# (name, body, inputs (a, x, c), expected stores)
V = []
V.append(("max.s16 x,0 (x=-5 run time)", "  max.s16 %h2, %h1, 0;\n" + st16(0, "%h2"), (-5, 95.75, 0), [0]))
V.append(("or.b16 then max.s16 (a=-6)", "  or.b16 %h2, %h1, 1;\n  max.s16 %h3, %h2, 0;\n" + st16(0, "%h2") + st16(1, "%h3"), (-6, 95.75, 0), [-5, 0]))
V.append(("selp{2,-6} max.s16 0", "  selp.b16 %h2, 2, -6, %p1;\n  max.s16 %h3, %h2, 0;\n" + st16(0, "%h3"), (0, 95.75, 0), [0]))
V.append(("selp{2,-6}|1 max.s16 0", "  selp.b16 %h2, 2, -6, %p1;\n  or.b16 %h3, %h2, 1;\n  max.s16 %h4, %h3, 0;\n" + st16(0, "%h3") + st16(1, "%h4"), (0, 95.75, 0), [-5, 0]))
V.append(("selp{2,-6}|selp{1,0} max eq selp (case 1300)",
          "  selp.b16 %h2, 2, -6, %p1;\n  selp.u16 %h5, 1, 0, %p2;\n  or.b16 %h3, %h2, %h5;\n  max.s16 %h4, %h3, 0;\n  setp.eq.s16 %p3, %h4, 0;\n  selp.b16 %h6, 5, %h4, %p3;\n"
          + st16(0, "%h3") + st16(1, "%h4") + stp(2, "%p3") + st16(3, "%h6"), (0, 95.75, 0), [-5, 0, 1, 5]))
V.append(("the same in 32 bits",
          "  selp.b32 %r4, 2, -6, %p1;\n  selp.u32 %r5, 1, 0, %p2;\n  or.b32 %r6, %r4, %r5;\n  max.s32 %r7, %r6, 0;\n  setp.eq.s32 %p3, %r7, 0;\n  selp.b32 %r8, 5, %r7, %p3;\n"
          + st32(0, "%r6") + st32(1, "%r7") + stp(2, "%p3") + st32(3, "%r8"), (0, 95.75, 0), [-5, 0, 1, 5]))
V.append(("selp{3,-5} max.s16 0 eq selp", "  selp.b16 %h2, 3, -5, %p1;\n  max.s16 %h4, %h2, 0;\n  setp.eq.s16 %p3, %h4, 0;\n  selp.b16 %h6, 5, %h4, %p3;\n" + st16(0, "%h4") + st16(1, "%h6"), (0, 95.75, 0), [0, 5]))
V.append(("selp{2,-6}|1 max.s32 (sext) 0", "  selp.b16 %h2, 2, -6, %p1;\n  or.b16 %h3, %h2, 1;\n  cvt.s32.s16 %r4, %h3;\n  max.s32 %r5, %r4, 0;\n" + st32(0, "%r5"), (0, 95.75, 0), [0]))
V.append(("selp{2,-6}|1 min.s16 0", "  selp.b16 %h2, 2, -6, %p1;\n  or.b16 %h3, %h2, 1;\n  min.s16 %h4, %h3, 0;\n" + st16(0, "%h4"), (0, 95.75, 0), [-5]))
V.append(("selp{2,-6}|1 max.s16 -3", "  selp.b16 %h2, 2, -6, %p1;\n  or.b16 %h3, %h2, 1;\n  max.s16 %h4, %h3, -3;\n" + st16(0, "%h4"), (0, 95.75, 0), [-3]))
V.append(("selp{2,-6}|1 max.s16 c (c=0 run time)", "  selp.b16 %h2, 2, -6, %p1;\n  or.b16 %h3, %h2, 1;\n  max.s16 %h4, %h3, %h12;\n" + st16(0, "%h4"), (0, 95.75, 0), [0]))
V.append(("selp{2,-6}|1 == 0", "  selp.b16 %h2, 2, -6, %p1;\n  or.b16 %h3, %h2, 1;\n  max.s16 %h4, %h3, 0;\n  setp.ne.s16 %p3, %h4, 0;\n" + stp(0, "%p3"), (0, 95.75, 0), [0]))
V.append(("a|1 max.s16 0 eq selp (a=-6 run time)", "  or.b16 %h3, %h1, 1;\n  max.s16 %h4, %h3, 0;\n  setp.eq.s16 %p3, %h4, 0;\n  selp.b16 %h6, 5, %h4, %p3;\n" + st16(0, "%h4") + st16(1, "%h6"), (-6, 95.75, 0), [0, 5]))
V.append(("a|1 max.s32 0 eq selp (a=-6 run time)", "  or.b32 %r4, %r1, 1;\n  max.s32 %r5, %r4, 0;\n  setp.eq.s32 %p3, %r5, 0;\n  selp.b32 %r6, 5, %r5, %p3;\n" + st32(0, "%r5") + st32(1, "%r6"), (-6, 95.75, 0), [0, 5]))
V.append(("a|1 max.s32 0 == 0 (a=-6)", "  or.b32 %r4, %r1, 1;\n  max.s32 %r5, %r4, 0;\n  setp.eq.s32 %p3, %r5, 0;\n" + stp(0, "%p3"), (-6, 95.75, 0), [1]))
V.append(("a|1 max.s64 0 == 0 (a=-6)", "  cvt.s64.s32 %rd3, %r1;\n  or.b64 %rd3, %rd3, 1;\n  max.s64 %rd3, %rd3, 0;\n  setp.eq.s64 %p3, %rd3, 0;\n" + stp(0, "%p3"), (-6, 95.75, 0), [1]))
V.append(("a|1 max.u32... (control: a|1 != 0)", "  or.b32 %r4, %r1, 1;\n  setp.eq.s32 %p3, %r4, 0;\n" + stp(0, "%p3"), (-6, 95.75, 0), [0]))
V.append(("a|4 max.s32 0 == 0 (a=-8)", "  or.b32 %r4, %r1, 4;\n  max.s32 %r5, %r4, 0;\n  setp.eq.s32 %p3, %r5, 0;\n" + stp(0, "%p3"), (-8, 95.75, 0), [1]))
V.append(("a+1 (a=-1) max.s32 0 == 0? control", "  add.s32 %r4, %r1, 1;\n  max.s32 %r5, %r4, 0;\n  setp.eq.s32 %p3, %r5, 0;\n" + stp(0, "%p3"), (-6, 95.75, 0), [1]))
V.append(("a|1 max.s32 0 > 0 (a=-6)", "  or.b32 %r4, %r1, 1;\n  max.s32 %r5, %r4, 0;\n  setp.gt.s32 %p3, %r5, 0;\n" + stp(0, "%p3"), (-6, 95.75, 0), [0]))
V.append(("a|1 min.s32 0 == 0 (a=5)", "  or.b32 %r4, %r1, 1;\n  min.s32 %r5, %r4, 0;\n  setp.eq.s32 %p3, %r5, 0;\n" + stp(0, "%p3"), (5, 95.75, 0), [1]))
V.append(("a|1 max.u32 1 == 0? (a=-6) control", "  or.b32 %r4, %r1, 1;\n  max.u32 %r5, %r4, 0;\n  setp.eq.s32 %p3, %r5, 0;\n" + stp(0, "%p3"), (-6, 95.75, 0), [0]))
# what codegen emits since the workaround (cg_ptxas.c): the max in 32 bits, the rest as before
V.append(("max.s32 (sext) cvt eq.s16 selp.b16 (a=-6)", "  or.b16 %h3, %h1, 1;\n  cvt.s32.s16 %r4, %h3;\n  max.s32 %r5, %r4, 0;\n  cvt.u16.u32 %h4, %r5;\n  setp.eq.s16 %p3, %h4, 0;\n  selp.b16 %h6, 5, %h4, %p3;\n" + st16(0, "%h4") + st16(1, "%h6"), (-6, 95.75, 0), [0, 5]))
V.append(("min.s16 0 eq selp (a=5)", "  min.s16 %h4, %h1, 0;\n  setp.eq.s16 %p3, %h4, 0;\n  selp.b16 %h6, 5, %h4, %p3;\n" + st16(0, "%h4") + st16(1, "%h6"), (5, 95.75, 0), [0, 5]))
V.append(("max.u16 1 eq selp (a=0)", "  max.u16 %h4, %h1, 1;\n  setp.eq.s16 %p3, %h4, 1;\n  selp.b16 %h6, 5, %h4, %p3;\n" + st16(0, "%h4") + st16(1, "%h6"), (0, 95.75, 0), [1, 5]))

F = []
NAN = float("nan")
def fv(name, body, x, exp): F.append((name, body, x, exp))
fv("abs.f32 > -55.5", "  abs.f32 %f2, %f1;\n  setp.gt.f32 %p3, %f2, 0fC25E0000;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.f32 >= -0", "  abs.f32 %f2, %f1;\n  setp.ge.f32 %p3, %f2, 0f80000000;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.f32 >= 0", "  abs.f32 %f2, %f1;\n  setp.ge.f32 %p3, %f2, 0f00000000;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.f32 != -1", "  abs.f32 %f2, %f1;\n  setp.ne.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.f32 < -1 (false anyway)", "  abs.f32 %f2, %f1;\n  setp.lt.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.f32 ltu -1 (true for NaN)", "  abs.f32 %f2, %f1;\n  setp.ltu.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [1])
fv("abs.f32 equ -1 (true for NaN)", "  abs.f32 %f2, %f1;\n  setp.equ.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [1])
fv("and 0x7fffffff > -55.5", "  and.b32 %r4, %r3, 2147483647;\n  mov.b32 %f2, %r4;\n  setp.gt.f32 %p3, %f2, 0fC25E0000;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.f64 > -55.5", "  cvt.f64.f32 %d1, %f1;\n  abs.f64 %d2, %d1;\n  setp.gt.f64 %p3, %d2, 0dC04BC00000000000;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.f16 > -55.5", "  cvt.rn.f16.f32 %h2, %f1;\n  abs.f16 %h3, %h2;\n  mov.b16 %h4, 0xD2F0;\n  setp.gt.f16 %p3, %h3, %h4;\n" + stp(0, "%p3"), NAN, [0])
fv("abs.bf16 > -55.5", "  cvt.rn.bf16.f32 %h2, %f1;\n  abs.bf16 %h3, %h2;\n  mov.b16 %h4, 0xC25E;\n  setp.gt.bf16 %p3, %h3, %h4;\n" + stp(0, "%p3"), NAN, [0])
fv("x*x > -1 (square, also never negative)", "  mul.f32 %f2, %f1, %f1;\n  setp.gt.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("sqrt(x) > -1", "  sqrt.rn.f32 %f2, %f1;\n  setp.gt.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("max(x,0) > -1", "  max.f32 %f2, %f1, 0f00000000;\n  setp.gt.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [1])
fv("abs.f32 > c (c=-55.5 run time)", "  abs.f32 %f2, %f1;\n  mov.b32 %f3, %r1;\n  setp.gt.f32 %p3, %f2, %f3;\n" + stp(0, "%p3"), NAN, [0])

def main():
    rows = V + [(n, b, (struct.unpack("<i", struct.pack("<f", -55.5))[0], x, 0), e) for n, b, x, e in F]
    for name, body, inp, exp in rows:
        inb = struct.pack("<ifi", *inp)
        ptx = (HEAD + body + TAIL).encode()
        res = []
        for lv in (0, 4):
            try:
                o = run(load(ptx, lv), "k", [inb, bytes(16)], 1, 1)[1]
                res.append(list(struct.unpack(f"<{len(exp)}i", o[:4 * len(exp)])))
            except Exception as e:
                res.append(f"error {e}")
        mark = "OK " if res[0] == exp and res[1] == exp else ("PTXAS" if res[0] == exp else "???")
        print(f"{mark:5s} {name:46s} expected {exp} O0 {res[0]} O4 {res[1]}")
main()
