#!/usr/bin/env python3
"""check_layers.py: fails on an #include that breaks minitir's layering.

The layers (docs/architecture.md): ir at the bottom; schedule and lower
beside each other over ir; sim (the SIMT simulator) and codegen beside
each other over lower; runtime over codegen; tune (the tuning
database) over runtime and schedule.  Each
layer is a folder of src/ and one public header of include/minitir/.  The
build's include paths already keep ir away from every other layer's
folder; what they cannot stop (include/ and src/ are visible to the layers
over ir) this script checks, over every file of src/, include/, tools/ and
examples/:

  * a file of layer L may include the public headers and the internal
    headers of L and of the layers below L only;
  * another layer's internal header is named by its layer's folder
    ("ir/ir_internal.h"), so that the dependency shows at the include;
  * a public header includes public headers only;
  * tools/ and examples/ include public headers only (and their own);
  * only codegen includes LLVM's headers, only tune SQLite's.

Usage: check_layers.py [ROOT [STAMP]] (ROOT defaults to the repository
holding this script).  Prints one line per violation and exits 1 if there
is any; otherwise writes the file STAMP, if given (for the build).
The meson build runs it (the layer_check target) and so does the test
suite (layers, and layers_selftest, which plants violations).
"""
import os
import re
import sys

# Each layer and the layers directly below it.
LAYERS = {
    "ir": [],
    "schedule": ["ir"],
    "lower": ["ir"],
    "sim": ["lower"],
    "codegen": ["lower"],
    "runtime": ["codegen"],
    "tune": ["runtime", "schedule"],
}

# The layer of each public header of include/minitir/.
PUBLIC = {
    "ir.h": "ir",
    "status.def": "ir",
    "annotations.def": "ir",
    "nodes.def": "ir",
    "intrinsics.def": "ir",
    "target.h": "ir",
    "thread_axes.def": "ir",
    "schedule.h": "schedule",
    "lower.h": "lower",
    "sim.h": "sim",
    "codegen.h": "codegen",
    "runtime.h": "runtime",
    "tune.h": "tune",
}

# System headers only some layers may include (prefix -> layers).
EXTERNAL = {"llvm-c/": {"codegen"}, "sqlite3": {"tune"}}

APPS = ("tools", "examples")
SOURCE_EXT = (".c", ".h", ".def")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def allowed(layer):
    """The layer and every layer below it."""
    out, todo = set(), [layer]
    while todo:
        l = todo.pop()
        if l not in out:
            out.add(l)
            todo.extend(LAYERS[l])
    return out


def layer_of(root, path):
    """(kind, layer) of a file: ('src', L), ('public', L), ('app', None)
    or (None, None) for files outside the checked folders."""
    rel = os.path.relpath(path, root).split(os.sep)
    if len(rel) >= 3 and rel[0] == "src" and rel[1] in LAYERS:
        return "src", rel[1]
    if len(rel) == 3 and rel[0] == "include" and rel[1] == "minitir":
        return "public", PUBLIC.get(rel[2])
    if rel[0] in APPS:
        return "app", None
    return None, None


def internal_names(root):
    """Base names of the headers under src/ (an app must not include them)."""
    names = set()
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        names.update(f for f in files if f.endswith((".h", ".def")))
    return names


def check_include(root, path, kind, layer, bracket, name, internals):
    """The violation of one include, or None."""
    if bracket == "<":
        for prefix, layers in EXTERNAL.items():
            if name.startswith(prefix) and layer not in layers:
                return "only %s may include <%s>" % (" and ".join(sorted(layers)), name)
        if not name.startswith("minitir/"):
            return None
    if name.startswith("minitir/"):
        target = PUBLIC.get(name[len("minitir/"):])
        if target is None:
            return ('"%s" is not a known public header (add it to PUBLIC in '
                    "scripts/check_layers.py)" % name)
        if kind == "app" or target in allowed(layer):
            return None
        return "%s may not include %s's public header \"%s\" (%s may use: %s)" % (
            layer, target, name, layer, ", ".join(sorted(allowed(layer))))
    first = name.split("/")[0]
    local = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if kind == "app":
        if first in LAYERS or first == "src" or os.path.basename(name) in internals:
            return '"%s" is internal: tools and examples use include/minitir/ only' % name
        return None
    if kind == "public":
        return 'a public header includes public headers only, not "%s"' % name
    if first in LAYERS and "/" in name:
        if first not in allowed(layer):
            return '%s may not include %s\'s internal header "%s" (%s may use: %s)' % (
                layer, first, name, layer, ", ".join(sorted(allowed(layer))))
        if not os.path.exists(os.path.join(root, "src", name)):
            return '"%s" does not exist under src/' % name
        return None
    if os.path.exists(local):
        lkind, llayer = layer_of(root, local)
        if lkind == "src" and llayer == layer:
            return None
        return ('"%s" leaves the folder of %s: name another layer\'s header as '
                '"<layer>/<file>", a public one as "minitir/<file>"' % (name, layer))
    return ('"%s" is not in src/%s/: name another layer\'s header as "<layer>/<file>"'
            % (name, layer))


def check_file(root, path, internals):
    kind, layer = layer_of(root, path)
    if kind is None:
        return []
    rel = os.path.relpath(path, root)
    if kind == "public" and layer is None:
        return ["%s: not a known public header (add it to PUBLIC in "
                "scripts/check_layers.py)" % rel]
    errors = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            why = check_include(root, path, kind, layer, m.group(1), m.group(2), internals)
            if why:
                errors.append("%s:%d: %s" % (rel, lineno, why))
    return errors


def check_tree(root):
    internals = internal_names(root)
    errors = []
    for top in ("src", "include") + APPS:
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    errors += check_file(root, os.path.join(dirpath, f), internals)
    return errors


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "src")):
        print("check_layers: %s has no src/" % root, file=sys.stderr)
        return 2
    errors = check_tree(root)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print("check_layers: %d include(s) break the layering (docs/architecture.md)"
              % len(errors), file=sys.stderr)
        return 1
    if len(argv) > 2:
        with open(argv[2], "w") as f:
            f.write("layers ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
