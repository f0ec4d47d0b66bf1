#!/usr/bin/env python3
"""test_check_layers.py: scripts/check_layers.py accepts the tree as it is
and rejects each planted upward or sideways #include.

Each case copies src/, include/, tools/ and examples/ into a temporary
folder, adds one line to one file and expects the checker to fail naming
that file and line; the unchanged copy must pass.  Prints TAP.
Usage: test_check_layers.py CHECKER ROOT
"""
import os
import shutil
import subprocess
import sys
import tempfile

# (file, line planted at its end, what the checker's message must contain)
CASES = [
    ("src/ir/node.c", '#include "minitir/schedule.h"', "ir may not include schedule's"),
    ("src/ir/node.c", '#include "minitir/runtime.h"', "ir may not include runtime's"),
    ("src/ir/ir_internal.h", '#include "schedule/sched_internal.h"',
     "ir may not include schedule's internal"),
    ("src/lower/flatten.c", '#include "minitir/schedule.h"', "lower may not include schedule's"),
    ("src/lower/flatten.c", '#include "schedule/sched_internal.h"',
     "lower may not include schedule's internal"),
    ("src/schedule/split.c", '#include "minitir/lower.h"', "schedule may not include lower's"),
    ("src/codegen/codegen.c", '#include "minitir/runtime.h"', "codegen may not include runtime's"),
    ("src/codegen/codegen.c", '#include "runtime/rt_internal.h"',
     "codegen may not include runtime's internal"),
    ("src/sim/sim.c", '#include "ir_internal.h"', 'is not in src/sim/'),
    ("src/sim/sim.c", '#include "../schedule/sched_internal.h"', "leaves the folder of sim"),
    ("src/lower/flatten.c", '#include "minitir/sim.h"', "lower may not include sim's"),
    ("src/codegen/codegen.c", '#include "minitir/sim.h"', "codegen may not include sim's"),
    ("src/sim/sim.c", '#include "codegen/cg_internal.h"', "sim may not include codegen's"),
    ("include/minitir/sim.h", '#include "minitir/runtime.h"', "sim may not include runtime's"),
    ("src/schedule/split.c", "#include <llvm-c/Core.h>", "only codegen may include"),
    ("src/runtime/bench.c", "#include <sqlite3.h>", "only tune may include"),
    ("src/runtime/bench.c", '#include "minitir/tune.h"', "runtime may not include tune's"),
    ("src/schedule/split.c", '#include "tune/tune_internal.h"',
     "schedule may not include tune's internal"),
    ("include/minitir/ir.h", '#include "minitir/schedule.h"', "ir may not include schedule's"),
    ("include/minitir/lower.h", '#include "minitir/codegen.h"', "lower may not include codegen's"),
    ("include/minitir/codegen.h", '#include "ir/ir_internal.h"',
     "a public header includes public headers only"),
    ("include/minitir/runtime.h", '#include "minitir/nosuch.h"', "not a known public header"),
    ("tools/tirc/main.c", '#include "ir/ir_internal.h"', "tools and examples use include/minitir/"),
    ("examples/demo_matmul.c", '#include "sched_internal.h"',
     "tools and examples use include/minitir/"),
]


def copy_tree(root, dst):
    for top in ("src", "include", "tools", "examples"):
        shutil.copytree(os.path.join(root, top), os.path.join(dst, top),
                        ignore=shutil.ignore_patterns("*.o", "build*"))


def run(checker, root):
    p = subprocess.run([sys.executable, checker, root], capture_output=True, text=True)
    return p.returncode, p.stderr


def main(argv):
    checker, root = argv[1], argv[2]
    print("1..%d" % (len(CASES) + 1))
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        copy_tree(root, clean)
        rc, err = run(checker, clean)
        ok = rc == 0
        failed += not ok
        print("%s 1 - the tree as it is passes%s" % ("ok" if ok else "not ok",
                                                    "" if ok else "\n# " + err.replace("\n", "\n# ")))
        for i, (path, line, want) in enumerate(CASES, 2):
            case = os.path.join(tmp, "case%d" % i)
            shutil.copytree(clean, case)
            target = os.path.join(case, path)
            with open(target, encoding="utf-8") as f:
                nlines = f.read().count("\n")
            with open(target, "a", encoding="utf-8") as f:
                f.write(line + "\n")
            rc, err = run(checker, case)
            where = "%s:%d:" % (path, nlines + 1)
            ok = rc == 1 and any(l.startswith(where) and want in l for l in err.splitlines())
            failed += not ok
            print("%s %d - %s: %s rejected" % ("ok" if ok else "not ok", i, path, line))
            if not ok:
                print("# rc %d, wanted a line starting %r with %r; got:\n# %s"
                      % (rc, where, want, err.replace("\n", "\n# ")))
            shutil.rmtree(case)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
