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
# twentieth session: the expression fuzzer's seed 1930000013 case 2075 (|floor(8 / y)| in
# bfloat16 came out -1 at level 4): codegen's fabs of a 16-bit float is `and.b16 0x7fff`
pk = "  mov.u16 %h4, 16256;\n  mov.b32 %r4, {%h3, %h4};\n  st.global.b32 [%rd2], %r4;\n"
fv("cvt.rn.bf16 and 0x7fff (x=-1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  and.b16 %h3, %h2, 32767;\n" + st16(0, "%h3"), -1.0, [16256])
fv("floor cvt.rn.bf16 and 0x7fff (x=-0.5)", "  cvt.rmi.f32.f32 %f2, %f1;\n  cvt.rn.bf16.f32 %h2, %f2;\n  and.b16 %h3, %h2, 32767;\n" + st16(0, "%h3"), -0.5, [16256])
fv("floor cvt.rn.bf16 and, packed (x=-0.5)", "  cvt.rmi.f32.f32 %f2, %f1;\n  cvt.rn.bf16.f32 %h2, %f2;\n  and.b16 %h3, %h2, 32767;\n" + pk, -0.5, [1065369472])
fv("8/x floor cvt.rn.bf16 and, packed (x=-8)", "  mov.f32 %f3, 0f41000000;\n  div.rn.f32 %f2, %f3, %f1;\n  cvt.rmi.f32.f32 %f4, %f2;\n  cvt.rn.bf16.f32 %h2, %f4;\n  and.b16 %h3, %h2, 32767;\n" + pk, -8.0, [1065369472])
fv("cvt.rn.bf16 and, packed (x=-1)", "  cvt.rn.bf16.f32 %h3, %f1;\n  and.b16 %h3, %h3, 32767;\n" + pk, -1.0, [1065369472])
fv("cvt.rn.f16 and 0x7fff (x=-1)", "  cvt.rn.f16.f32 %h2, %f1;\n  and.b16 %h3, %h2, 32767;\n" + st16(0, "%h3"), -1.0, [15360])
fv("floor cvt.rn.f16 and, packed (x=-0.5)", "  cvt.rmi.f32.f32 %f2, %f1;\n  cvt.rn.f16.f32 %h2, %f2;\n  and.b16 %h3, %h2, 32767;\n  mov.u16 %h4, 16256;\n  mov.b32 %r4, {%h3, %h4};\n  st.global.b32 [%rd2], %r4;\n", -0.5, [1065368576])
fv("floor cvt.rn.bf16 abs.bf16, packed (x=-0.5)", "  cvt.rmi.f32.f32 %f2, %f1;\n  cvt.rn.bf16.f32 %h2, %f2;\n  abs.bf16 %h3, %h2;\n" + pk, -0.5, [1065369472])
fv("floor cvt.rn.bf16 (f32 and) packed (x=-0.5)", "  cvt.rmi.f32.f32 %f2, %f1;\n  cvt.rn.bf16.f32 %h2, %f2;\n  cvt.u32.u16 %r5, %h2;\n  and.b32 %r5, %r5, 32767;\n  cvt.u16.u32 %h3, %r5;\n" + pk, -0.5, [1065369472])
fv("abs.f32 then cvt.rn.bf16, packed (x=-1)", "  cvt.rmi.f32.f32 %f2, %f1;\n  abs.f32 %f3, %f2;\n  cvt.rn.bf16.f32 %h3, %f3;\n" + pk, -0.5, [1065369472])
# the class around it: other sign-bit operations on a 16-bit conversion, packed; a loaded
# 16-bit value; the pair conversion; the masked half packed high; a 16-bit store
fv("cvt.rn.bf16 neg.bf16, packed (x=1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  neg.bf16 %h3, %h2;\n" + pk, 1.0, [1065402240])
fv("cvt.rn.f16 neg.f16, packed (x=1)", "  cvt.rn.f16.f32 %h2, %f1;\n  neg.f16 %h3, %h2;\n" + pk, 1.0, [1065401344])
fv("cvt.rn.bf16 xor 0x8000, packed (x=1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  xor.b16 %h3, %h2, 0x8000;\n" + pk, 1.0, [1065402240])
fv("cvt.rn.bf16 or 0x8000, packed (x=1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  or.b16 %h3, %h2, 0x8000;\n" + pk, 1.0, [1065402240])
fv("cvt.rn.bf16x2 and 0x7fff7fff (x=-1)", "  cvt.rn.bf16x2.f32 %r4, %f1, %f1;\n  and.b32 %r4, %r4, 2147450879;\n  st.global.b32 [%rd2], %r4;\n", -1.0, [1065369472])
fv("cvt.rn.bf16 and, packed high (x=-1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  and.b16 %h3, %h2, 32767;\n  mov.u16 %h4, 16256;\n  mov.b32 %r4, {%h4, %h3};\n  st.global.b32 [%rd2], %r4;\n", -1.0, [1065369472])
fv("cvt.rn.bf16 and, st.b16 (x=-1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  and.b16 %h3, %h2, 32767;\n  st.global.b16 [%rd2], %h3;\n", -1.0, [16256])
fv("cvt.rn.bf16 and 0x7ff0, packed (x=-1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  and.b16 %h3, %h2, 32752;\n" + pk, -1.0, [1065369472])
fv("cvt.rn.bf16 add.s16 0, packed (x=-1) control", "  cvt.rn.bf16.f32 %h2, %f1;\n  add.s16 %h3, %h2, 0;\n" + pk, -1.0, [1065402240])
V.append(("loaded bf16 and 0x7fff, packed (a=0xBF80)", "  and.b16 %h3, %h1, 32767;\n" + pk, (0xBF80, 0.0, 0), [1065369472]))
V.append(("cvt.rzi bf16? no: cvt.rn.bf16.f32 then and then cvt.f32.bf16 (x=-1)", "  cvt.rn.bf16.f32 %h2, %f1;\n  and.b16 %h3, %h2, 32767;\n  cvt.f32.bf16 %f5, %h3;\n  st.global.f32 [%rd2], %f5;\n", (0, -1.0, 0), [1065353216]))
# what else ptxas may take as never negative (x = NaN): run 116 found x * x > -1 and
# |x| >= 0 wrong; cg_ptxas.c rewrites |x| and x * x against constants <= 0
fv("x*x >= 0", "  mul.f32 %f2, %f1, %f1;\n  setp.ge.f32 %p3, %f2, 0f00000000;\n" + stp(0, "%p3"), NAN, [0])
fv("setp.num x*x", "  mul.f32 %f2, %f1, %f1;\n  setp.num.f32 %p3, %f2, %f2;\n" + stp(0, "%p3"), NAN, [0])
fv("x*x+1 > -1", "  mul.f32 %f2, %f1, %f1;\n  add.f32 %f3, %f2, 0f3F800000;\n  setp.gt.f32 %p3, %f3, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("fma(x,x,1) > -1", "  fma.rn.f32 %f3, %f1, %f1, 0f3F800000;\n  setp.gt.f32 %p3, %f3, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("|x|+1 > -1", "  abs.f32 %f2, %f1;\n  add.f32 %f3, %f2, 0f3F800000;\n  setp.gt.f32 %p3, %f3, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("|x|*2 > -1", "  abs.f32 %f2, %f1;\n  mul.f32 %f3, %f2, 0f40000000;\n  setp.gt.f32 %p3, %f3, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("x*x*x*x > -1", "  mul.f32 %f2, %f1, %f1;\n  mul.f32 %f3, %f2, %f2;\n  setp.gt.f32 %p3, %f3, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("ex2(x) > -1", "  ex2.approx.f32 %f2, %f1;\n  setp.gt.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("sqrt(x) >= 0", "  sqrt.rn.f32 %f2, %f1;\n  setp.ge.f32 %p3, %f2, 0f00000000;\n" + stp(0, "%p3"), NAN, [0])
fv("rsqrt(x) > -1", "  rsqrt.approx.f32 %f2, %f1;\n  setp.gt.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("x*x > -1 (f64)", "  cvt.f64.f32 %d1, %f1;\n  mul.f64 %d2, %d1, %d1;\n  setp.gt.f64 %p3, %d2, 0dBFF0000000000000;\n" + stp(0, "%p3"), NAN, [0])
fv("x*x > -1 (f16)", "  cvt.rn.f16.f32 %h2, %f1;\n  mul.f16 %h3, %h2, %h2;\n  mov.b16 %h4, 0xBC00;\n  setp.gt.f16 %p3, %h3, %h4;\n" + stp(0, "%p3"), NAN, [0])
fv("selp(|x|, 1) > -1", "  abs.f32 %f2, %f1;\n  selp.f32 %f3, 0f3F800000, %f2, %p2;\n  setp.gt.f32 %p3, %f3, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
fv("cvt.f32.f16(|h|) > -1", "  cvt.rn.f16.f32 %h2, %f1;\n  abs.f16 %h3, %h2;\n  cvt.f32.f16 %f2, %h3;\n  setp.gt.f32 %p3, %f2, 0fBF800000;\n" + stp(0, "%p3"), NAN, [0])
# run 119's open case (seed 1930200005 case 672): NVPTX's x / -2 is -((x + (x >>> 31)) >> 1);
# for x = INT32_MIN the value is 1073741824; the GPU's min-reduction gave -1073741824, as if
# ptxas divided -x (which overflows) instead.  a = INT32_MIN at run time; c = INT32_MAX
dv = "  shr.u32 %r4, %r1, 31;\n  add.s32 %r5, %r1, %r4;\n  shr.s32 %r6, %r5, 1;\n  neg.s32 %r7, %r6;\n"
V.append(("x/-2 expanded (a=INT32_MIN)", dv + st32(0, "%r7"), (-2**31, 0.0, 2**31 - 1), [1073741824]))
V.append(("x/-2 expanded, min with c/-2 (a=INT32_MIN, c=INT32_MAX)", dv + "  shr.u32 %r8, %r2, 31;\n  add.s32 %r9, %r2, %r8;\n  shr.s32 %r10, %r9, 1;\n  neg.s32 %r11, %r10;\n  min.s32 %r12, %r7, %r11;\n" + st32(0, "%r12"), (-2**31, 0.0, 2**31 - 1), [-1073741823]))
V.append(("div.s32 a, -2 (a=INT32_MIN)", "  div.s32 %r7, %r1, -2;\n" + st32(0, "%r7"), (-2**31, 0.0, 0), [1073741824]))

# the twenty-first session's rewrite candidate (cg_ptxas.c pattern 4: inline div.sN by -2^k), in
# 16 and 64 bits too, with and without the min of the case, and NVPTX's expansions in those widths
V.append(("div.s32 a, -2, min with c/-2 (a=INT32_MIN, c=INT32_MAX)", "  div.s32 %r7, %r1, -2;\n  div.s32 %r8, %r2, -2;\n  min.s32 %r9, %r7, %r8;\n" + st32(0, "%r9"), (-2**31, 0.0, 2**31 - 1), [-1073741823]))
V.append(("div.s32 a, -4 (a=INT32_MIN)", "  div.s32 %r7, %r1, -4;\n" + st32(0, "%r7"), (-2**31, 0.0, 0), [536870912]))
V.append(("div.s32 a, INT32_MIN (a=INT32_MIN)", "  div.s32 %r7, %r1, -2147483648;\n" + st32(0, "%r7"), (-2**31, 0.0, 0), [1]))
d64 = "  cvt.s64.s32 %rd3, %r1;\n  shl.b64 %rd3, %rd3, 32;\n"
V.append(("div.s64 INT64_MIN, -2", d64 + "  div.s64 %rd3, %rd3, -2;\n  mov.b64 {%r4, %r5}, %rd3;\n" + st32(0, "%r4") + st32(1, "%r5"), (-2**31, 0.0, 0), [0, 1073741824]))
V.append(("x/-2 expanded in 64 bits (INT64_MIN)", d64 + "  shr.u64 %rd1, %rd3, 63;\n  add.s64 %rd1, %rd3, %rd1;\n  shr.s64 %rd1, %rd1, 1;\n  neg.s64 %rd1, %rd1;\n  mov.b64 {%r4, %r5}, %rd1;\n" + st32(0, "%r4") + st32(1, "%r5"), (-2**31, 0.0, 0), [0, 1073741824]))
V.append(("div.s16 a, -2 (a=INT16_MIN)", "  div.s16 %h2, %h1, -2;\n" + st16(0, "%h2"), (-32768, 0.0, 0), [16384]))
V.append(("x/-2 expanded in 16 bits (INT16_MIN)", "  shr.u16 %h2, %h1, 15;\n  add.s16 %h3, %h1, %h2;\n  shr.s16 %h4, %h3, 1;\n  neg.s16 %h5, %h4;\n" + st16(0, "%h5"), (-32768, 0.0, 0), [16384]))

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
