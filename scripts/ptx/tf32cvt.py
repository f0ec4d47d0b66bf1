# PTX experiment (run 46): the TF32 kernel's input conversion.  ncu (run 45) put 24% of the warps'
# samples on F2FP, one per fragment register (as many as HMMA): the conversion pipe (16 results a
# clock per SM) is slower than the tensor pipe needs.  Variants of `tirc ptx matmul --dtype tf32`:
#   python3 tf32cvt.py k.ptx   writes k_rz.ptx (no conversion: the raw float32 bits, which the
#   tensor core reads as TF32 by ignoring the low 13 bits, i.e. rounds toward zero), k_rna.ptx
#   (nearest, ties away, as one integer add of 0x1000 before that truncation), k_rne.ptx (nearest
#   even by integer ops: + 0xfff + bit 13).  No NaN care in the integer forms (an experiment).
import sys, re
src = sys.argv[1]
s = open(src).read()
pat = re.compile(r'\tcvt\.rn\.tf32\.f32 (%r\d+), (%f\d+);')
def rz(t): return pat.sub(r'\tmov.b32 \1, \2;', t)
def rna(t): return pat.sub(r'\tmov.b32 \1, \2;\n\tadd.s32 \1, \1, 4096;', t)
def rne(t):
    t = t.replace('.reg .b32 \t%r<', '.reg .b32 %tq<2>;\n\t.reg .b32 \t%r<', 1)
    return pat.sub(r'\tmov.b32 \1, \2;\n\tshr.u32 %tq0, \1, 13;\n\tand.b32 %tq0, %tq0, 1;\n'
                   r'\tadd.s32 \1, \1, %tq0;\n\tadd.s32 \1, \1, 4095;', t)
base = src[:-4]
for name, f in [('rz', rz), ('rna', rna), ('rne', rne)]:
    out = f(s)
    assert 'cvt.rn.tf32' not in out
    open(f'{base}_{name}.ptx', 'w').write(out)
