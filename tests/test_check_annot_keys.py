#!/usr/bin/env python3
"""Self-test of scripts/check_annot_keys.py on planted trees: a tree that
names every key through TIR_ANN_* passes (keys in comments and in longer
messages are fine); a bare key literal in src/, tools/ or examples/ fails,
and so does a key of the table that src/ never names.

Usage: test_check_annot_keys.py CHECK_SCRIPT.  Prints TAP."""
import os
import shutil
import subprocess
import sys
import tempfile

DEF = '''TIR_ANN(ALPHA, "alpha_key", TIR_ANNOT_INT)
TIR_ANN(BETA, "beta_key", TIR_ANNOT_INTS)
#undef TIR_ANN
'''
GOOD = {
    "src/lower/a.c": '/* reads "alpha_key" */\nint a = TIR_ANN_ALPHA;\n'
                     'const char *m = "alpha_key must be an int";\n',
    "src/codegen/b.c": "// beta_key\nint b = TIR_ANN_BETA;\n",
}


def plant(root, files):
    os.makedirs(os.path.join(root, "include", "minitir"))
    with open(os.path.join(root, "include", "minitir", "annotations.def"), "w") as f:
        f.write(DEF)
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def run(script, files):
    root = tempfile.mkdtemp()
    try:
        plant(root, files)
        return subprocess.run([sys.executable, script, root], capture_output=True, text=True)
    finally:
        shutil.rmtree(root)


def main():
    script = sys.argv[1]
    cases = [
        ("clean tree passes", GOOD, 0, ""),
        ("bare literal in src fails", dict(GOOD, **{"src/lower/c.c": 'const char *k = "beta_key";\n'}),
         1, 'names annotation key "beta_key" by string'),
        ("bare literal in examples fails", dict(GOOD, **{"examples/x/e.c": 'f("alpha_key");\n'}),
         1, "examples"),
        ("a key named only in src/ir is unused",
         {"src/ir/n.c": "int a = TIR_ANN_ALPHA;\n", "src/lower/b.c": "int b = TIR_ANN_BETA;\n"},
         1, '"alpha_key" (TIR_ANN_ALPHA) is not used'),
    ]
    print("1..%d" % len(cases))
    failed = 0
    for i, (name, files, rc, want) in enumerate(cases, 1):
        r = run(script, files)
        ok = r.returncode == rc and want in r.stdout
        failed += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
        if not ok:
            print("# rc %d, output: %s" % (r.returncode, r.stdout.replace("\n", " | ")))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
