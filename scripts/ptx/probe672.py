# Probe (twenty-first session): the open case seed 1930200005 case 672 (docs/reliability.md).
# NVPTX computes truncdiv(x, -2) as -((x + (x >>> 31)) >> 1); an int32 min-reduction of it over
# X0 with INT32_MIN among the x gave -1073741824 at JIT level 4, -1073741823 (right) at level 0.
# Runs the case's own PTX, and the same PTX with each candidate rewrite of the division, at
# levels 0 and 4, on inputs that put INT32_MIN at each position of a thread's eight.
# usage: python3 probe672.py   (on the GPU machine)
import os, re, struct, sys
sys.argv = sys.argv[:1] + ["/nonexistent"]
here = os.path.dirname(os.path.abspath(__file__))
exec(open(os.path.join(here, "jitprobe.py")).read().split("d = sys.argv[1]")[0])

base = open(os.path.join(here, "case1930200005_672.ptx")).read()
EXP = re.compile(r"\tshr\.u32 \t(%r\d+), (%r\d+), 31;\n\tadd\.s32 \t(%r\d+), \2, \1;\n"
                 r"\tshr\.s32 \t(%r\d+), \3, 1;\n\tneg\.s32 \t(%r\d+), \4;\n")

def variant(name):
    """The PTX with each x / -2 expansion replaced as `name` says."""
    def rep(m):
        t, x, s, q, r = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
        if name == "sub 0": return f"\tshr.u32 \t{t}, {x}, 31;\n\tadd.s32 \t{s}, {x}, {t};\n\tshr.s32 \t{q}, {s}, 1;\n\tsub.s32 \t{r}, 0, {q};\n"
        if name == "not(q-1)": return f"\tshr.u32 \t{t}, {x}, 31;\n\tadd.s32 \t{s}, {x}, {t};\n\tshr.s32 \t{q}, {s}, 1;\n\tadd.s32 \t{s}, {q}, -1;\n\tnot.b32 \t{r}, {s};\n"
        if name == "div.s32 -2": return f"\tdiv.s32 \t{r}, {x}, -2;\n"
        if name == "64-bit": return (f"\t{{ .reg .s64 a, b, c;\n\tcvt.s64.s32 \ta, {x};\n\tshr.u64 \tb, a, 63;\n\tadd.s64 \tc, a, b;\n"
                                     f"\tshr.s64 \tc, c, 1;\n\tneg.s64 \tc, c;\n\tcvt.u32.u64 \t{r}, c; }}\n")
        if name == "unsigned": return (f"\t{{ .reg .pred p; .reg .b32 n, u, v;\n\tsetp.lt.s32 \tp, {x}, 0;\n\tsub.s32 \tn, 0, {x};\n\tshr.u32 \tu, n, 1;\n"
                                       f"\tshr.s32 \tv, {x}, 1;\n\tneg.s32 \tv, v;\n\tselp.b32 \t{r}, u, v, p; }}\n")
        if name == "mul -1": return (f"\t{{ .reg .b32 n;\n\tshr.u32 \t{t}, {x}, 31;\n\tadd.s32 \t{s}, {x}, {t};\n\tshr.s32 \t{q}, {s}, 1;\n\tmul.lo.s32 \t{r}, {q}, -1; }}\n")
        return m.group(0)
    return EXP.sub(rep, base)

MIN, MAX = -2**31, 2**31 - 1
def inputs():
    """(name, X0 as 64 ints, expected Y as 8 ints) -- thread t reduces X0[8t .. 8t+7]."""
    rows = []
    for pos in range(8):
        x = [5] * 64
        x[pos] = MIN; x[(pos + 1) % 8] = MAX         # thread 0: INT32_MIN at pos, INT32_MAX next
        for t in range(1, 8): x[8 * t + pos] = MIN    # threads 1-7: INT32_MIN at pos, rest 5
        rows.append((f"INT32_MIN at {pos}", x))
    rows.append(("no INT32_MIN", [(-1) ** i * (i * 12345) for i in range(64)]))
    return rows

def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q
def wrap(v): return (v + 2**31) % 2**32 - 2**31

def main():
    names = ["as emitted", "sub 0", "not(q-1)", "div.s32 -2", "64-bit", "unsigned", "mul -1"]
    print("pattern matches in the case's PTX:", len(EXP.findall(base)))
    wrong = {}
    for vn in names:
        ptx = variant(vn).encode()
        for iname, x in inputs():
            exp = [min(wrap(trunc_div(v, -2)) for v in x[8 * t:8 * t + 8]) for t in range(8)]
            res = []
            for lv in (0, 4):
                try:
                    y = run(load(ptx, lv), "reduce", [struct.pack("<64i", *x), bytes(512), b"\x55" * 32], 1, 8)[2]
                    res.append(list(struct.unpack("<8i", y)))
                except Exception as e:
                    res.append(f"error {e}")
            mark = "OK " if res[0] == exp and res[1] == exp else ("PTXAS" if res[0] == exp else "???")
            bad = "" if mark == "OK " else f" expected {exp} O0 {res[0]} O4 {res[1]}"
            print(f"{mark:5s} {vn:12s} {iname:18s}{bad}")
            if mark != "OK ": wrong[vn] = wrong.get(vn, 0) + 1
    print("summary: " + ", ".join(f"{vn} {'right' if vn not in wrong else f'{wrong[vn]} wrong'}" for vn in names))
main()
