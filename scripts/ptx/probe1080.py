# Probe (twenty-fourth session): the expression fuzzer's seed 1936300006 case 1080, an int32
# min-reduction of x // -1 over four loaded values, right at JIT level 0 and wrong above it on the
# H100 (interpreter 4, GPU -8).  NVPTX emits it as min.s32 of neg.s32: runs the case's own PTX
# (case1936300006_1080.ptx) and the same PTX with each neg.s32 rewritten, at JIT levels 0-4, on
# inputs with INT32_MIN, INT32_MAX, 0, +-1 and random values in each thread's four, against the
# wrapping negation's minimum.
# usage: python3 probe1080.py   (on the GPU machine)
import os, random, re, struct, sys
sys.argv = sys.argv[:1] + ["/nonexistent"]
here = os.path.dirname(os.path.abspath(__file__))
exec(open(os.path.join(here, "jitprobe.py")).read().split("d = sys.argv[1]")[0])

base = open(os.path.join(here, "case1936300006_1080.ptx")).read()
NEG = re.compile(r"\tneg\.s32 \t(%r\d+), (%r\d+);\n")
VARIANTS = {
    "as emitted": None,
    "sub 0": lambda r, x: f"\tsub.s32 \t{r}, 0, {x};\n",
    "not+1": lambda r, x: f"\tnot.b32 \t{r}, {x};\n\tadd.s32 \t{r}, {r}, 1;\n",
    "mul -1": lambda r, x: f"\tmul.lo.s32 \t{r}, {x}, -1;\n",
}
MIN, MAX = -2**31, 2**31 - 1
rng = random.Random(1080)
special = [MIN, MAX, 0, -1, 1, -8, -4, 4, 8]
x2 = []
for g in range(16):
    if g < 8: x2 += [rng.choice(special) for _ in range(4)]
    else: x2 += [rng.randrange(MIN, MAX + 1) if rng.random() < 0.5 else rng.randrange(-300, 300) for _ in range(4)]
def wrap(v): return (v + 2**31) % 2**32 - 2**31
want = [min(wrap(-v) for v in x2[4 * g:4 * g + 4]) for g in range(16)]
bufs = [bytes(64 * 8), bytes(64), struct.pack("<64i", *x2), bytes(64)]
summary = []
for name, fn in VARIANTS.items():
    ptx = base if fn is None else NEG.sub(lambda m: fn(m.group(1), m.group(2)), base)
    for lv in range(5):
        out = run(load(ptx.encode(), lv), "reduce", bufs, 16, 1)[3]
        got = list(struct.unpack("<16i", out))
        bad = [g for g in range(16) if got[g] != want[g]]
        print(f"{name:10s} -O{lv}: {'right' if not bad else 'WRONG at ' + str(len(bad)) + ' of 16'}"
              + "".join(f"\n    group {g}: x = {x2[4*g:4*g+4]}, want {want[g]}, got {got[g]}" for g in bad[:3]))
        if lv in (0, 4): summary.append(f"{name} O{lv} {'right' if not bad else 'wrong'}")
print("summary:", ", ".join(summary))
