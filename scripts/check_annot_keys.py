#!/usr/bin/env python3
"""check_annot_keys.py: fails when library code names an annotation key by
its string instead of through include/minitir/annotations.def.

Every key of the table must be
  * absent as a bare string literal ("software_pipeline_stage") from the
    code of src/, tools/ and examples/ (comments and longer messages that
    mention a key are fine): a misspelt literal compiles and silently
    turns a feature off, a misspelt TIR_ANN_* name does not compile;
  * read or written by name (TIR_ANN_<ENUM>) somewhere in src/ outside
    src/ir/, so that no key of the table is dead.

Usage: check_annot_keys.py [ROOT].  Prints one line per violation and
exits 1 if there is any.  The test suite runs it (annot_keys).
"""
import os
import re
import sys

ENTRY_RE = re.compile(r'^TIR_ANN\((\w+),\s*"([^"]+)"', re.M)
COMMENT_RE = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
FOLDERS = ("src", "tools", "examples")


def table(root):
    path = os.path.join(root, "include", "minitir", "annotations.def")
    with open(path, encoding="utf-8") as f:
        return ENTRY_RE.findall(f.read())


def sources(root):
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.join(dirpath, n)


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    keys = table(root)
    if not keys:
        print("annotations.def: no TIR_ANN entries found")
        return 1
    bad, used = [], set()
    for path in sources(root):
        with open(path, encoding="utf-8") as f:
            code = COMMENT_RE.sub("", f.read())
        rel = os.path.relpath(path, root)
        for enum, key in keys:
            if '"%s"' % key in code:
                bad.append('%s: names annotation key "%s" by string; use TIR_ANN_%s' % (rel, key, enum))
            if rel.split(os.sep)[:2] != ["src", "ir"] and re.search(r"\bTIR_ANN_%s\b" % enum, code):
                used.add(enum)
    for enum, key in keys:
        if enum not in used:
            bad.append('annotations.def: key "%s" (TIR_ANN_%s) is not used in src/' % (key, enum))
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
