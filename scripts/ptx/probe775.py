# Probe (twenty-fifth session): the expression fuzzer's seed 1936400003 case 775, a float16
# kernel (fma, fmod, min/max of float16 values) that gives -193.625 where the interpreter says NaN
# (an X3 of -inf), right at JIT level 0 (docs/reliability.md, "The PTX assembler").  Runs the
# case's own PTX (case1936400003_775.ptx) and variants with one kind of float16 instruction done
# in float32 instead (fma.rn.f16; setp.*.f16; add/sub.rn.f16), at JIT levels 0-4, on X3 patterns
# with -inf, +inf, NaN, zeros and finite values, against the as-emitted PTX at level 0.  The
# variant whose higher levels agree with level 0 names the instruction the assembler gets wrong.
# usage: python3 probe775.py   (on the GPU machine)
import os, random, re, struct, sys
sys.argv = sys.argv[:1] + ["/nonexistent"]
here = os.path.dirname(os.path.abspath(__file__))
exec(open(os.path.join(here, "jitprobe.py")).read().split("d = sys.argv[1]")[0])

base = open(os.path.join(here, "case1936400003_775.ptx")).read()
R = r"(%rs\d+)"
FMA = re.compile(rf"\tfma\.rn\.f16 \t{R}, {R}, {R}, {R};\n")
SETP = re.compile(rf"\tsetp\.(lt|eq|nan)\.f16 \t(%p\d+), {R}, {R};\n")
ADD = re.compile(rf"\t(add|sub)\.rn\.f16 \t{R}, {R}, {R};\n")
def fma32(m):
    d, a, b, c = m.groups()
    return ("\t{ .reg .f32 xa, xb, xc; cvt.f32.f16 xa, %s; cvt.f32.f16 xb, %s; cvt.f32.f16 xc, %s;"
            " fma.rn.f32 xa, xa, xb, xc; cvt.rn.f16.f32 %s, xa; }\n" % (a, b, c, d))
def setp32(m):
    op, p, a, b = m.groups()
    return ("\t{ .reg .f32 xa, xb; cvt.f32.f16 xa, %s; cvt.f32.f16 xb, %s; setp.%s.f32 %s, xa, xb; }\n"
            % (a, b, op, p))
def add32(m):
    op, d, a, b = m.groups()
    return ("\t{ .reg .f32 xa, xb; cvt.f32.f16 xa, %s; cvt.f32.f16 xb, %s; %s.rn.f32 xa, xa, xb;"
            " cvt.rn.f16.f32 %s, xa; }\n" % (a, b, op, d))
VARIANTS = {"as emitted": base, "fma in f32": FMA.sub(fma32, base),
            "setp in f32": SETP.sub(setp32, base), "add/sub in f32": ADD.sub(add32, base)}
VARIANTS["all in f32"] = ADD.sub(add32, SETP.sub(setp32, FMA.sub(fma32, base)))
# which of the three: the two adds of zero (max(x, x) + 0, min(x, y) + 0) or the subtraction
VARIANTS["add in f32"] = ADD.sub(lambda m: add32(m) if m.group(1) == "add" else m.group(0), base)
VARIANTS["sub in f32"] = ADD.sub(lambda m: add32(m) if m.group(1) == "sub" else m.group(0), base)
for k, v in VARIANTS.items():
    print(f"{k:14s}: {len(FMA.findall(v))} fma.f16, {len(SETP.findall(v))} setp.f16, "
          f"{len(ADD.findall(v))} add/sub.f16 left")
H = {"-inf": 0xFC00, "inf": 0x7C00, "nan": 0x7E00, "0": 0x0000, "-0": 0x8000, "1": 0x3C00,
     "-2.5": 0xC100, "65504": 0x7BFF}
rng = random.Random(775)
patterns = {"all -inf": [H["-inf"]] * 64, "all +inf": [H["inf"]] * 64}
mix = [rng.choice(list(H.values())) for _ in range(64)]
patterns["specials"] = mix
patterns["-inf among finite"] = [H["-inf"] if rng.random() < 0.25 else rng.randrange(0, 0x7BFF) |
                                 (0x8000 if rng.random() < 0.5 else 0) for _ in range(64)]
def f16(h): return struct.unpack("<e", struct.pack("<H", h))[0]
summary = []
for pname, x3 in patterns.items():
    bufs = [bytes(256), bytes(64), bytes(512), struct.pack("<64H", *x3), b"\x55\x55" * 64]
    ref = run(load(base.encode(), 0), "locals", bufs, 2, 4)[4]
    refv = struct.unpack("<64H", ref)
    print(f"\n{pname}: level-0 Y[0:8] = {[f16(v) for v in refv[:8]]}")
    for vname, ptx in VARIANTS.items():
        for lv in range(5):
            y = struct.unpack("<64H", run(load(ptx.encode(), lv), "locals", bufs, 2, 4)[4])
            bad = [i for i in range(64) if y[i] != refv[i] and not (f16(y[i]) != f16(y[i]) and f16(refv[i]) != f16(refv[i]))]
            line = f"  {vname:14s} -O{lv}: " + ("same" if not bad else f"{len(bad)} of 64 differ, e.g. Y[{bad[0]}] = {f16(y[bad[0]])} (level 0 {f16(refv[bad[0]])})")
            print(line)
            if lv in (0, 4): summary.append(f"{pname}/{vname}/O{lv}:{'same' if not bad else len(bad)}")
print("\nsummary:", ", ".join(summary))
