#!/usr/bin/env python3
"""OpenDAT ABI probe generator and runner.

Derives, from the *reference* DAT 2.0 headers only, the list of everything an
application or provider can depend on:

  * every struct/union defined in a dat2 header (size, alignment, and for each
    member - nested and anonymous ones included - offset, size and type),
  * every typedef (size, alignment, underlying type),
  * every enumerator (value) and named enum (size),
  * every function prototype (its type, spelled with the public typedef names),
  * every macro (whether it is defined; the value of integer constant, string
    and scalar macros; the size of other expression macros).

It writes a C probe program that prints one "name=value" line per item, builds
it once against the reference headers and once against the headers under
test, runs both and leaves ref.txt / ours.txt in the work directory. Items
that do not compile against the headers under test are printed as
"name=<does not compile>" so that the comparison names them.

Standard library only. Needs clang (AST dump and macro listing) and a C
compiler for the probe.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

# What a translation unit using the whole API includes. <netinet/in.h> first:
# the reference dat_ib_extensions.h needs a complete struct sockaddr_in6.
TU_INCLUDES = [
    "netinet/in.h",
    "dat2/udat.h",
    "dat2/dat_registry.h",
    "dat2/udat_redirection.h",
    "dat2/dat_ib_extensions.h",
]
# System headers the dat2 headers pull in; their macros are not ours to check.
BASELINE_INCLUDES = ["sys/types.h", "stddef.h", "stdio.h", "sys/socket.h", "netinet/in.h",
                     "stdarg.h"]

ANON_MARKERS = ("(unnamed", "(anonymous")
GUARD_RE = re.compile(r"^_[A-Z0-9_]*_H_?$")


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, **kw)


def tu_text(includes):
    return "".join("#include <%s>\n" % h for h in includes)


# --------------------------------------------------------------------------
# AST: clang's JSON dump omits "file" when it equals the previously printed
# one, so the current file has to be tracked in print order.
# --------------------------------------------------------------------------
class FileTracker:
    def __init__(self):
        self.cur = None

    def loc(self, l):
        if not isinstance(l, dict):
            return
        if "spellingLoc" in l or "expansionLoc" in l:
            self.loc(l.get("spellingLoc"))
            self.loc(l.get("expansionLoc"))
            return
        if "file" in l:
            self.cur = l["file"]

    def node(self, n):
        """Visits n and its subtree; returns the file n's own location is in."""
        self.loc(n.get("loc"))
        own = self.cur
        rng = n.get("range")
        if isinstance(rng, dict):
            self.loc(rng.get("begin"))
            self.loc(rng.get("end"))
        for c in n.get("inner", []) or []:
            self.node(c)
        return own


def load_ast(clang, ref_inc, work):
    tu = os.path.join(work, "ast_tu.c")
    with open(tu, "w") as f:
        f.write(tu_text(TU_INCLUDES))
    r = subprocess.run([clang, "-Xclang", "-ast-dump=json", "-fsyntax-only", "-std=gnu11",
                        "-I" + ref_inc, tu], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit("clang AST dump failed:\n" + r.stderr)
    ast = json.loads(r.stdout)
    tracker = FileTracker()
    decls = []
    for n in ast.get("inner", []):
        f = tracker.node(n)
        if f and "/dat2/" in f.replace(os.sep, "/"):
            decls.append((os.path.basename(f), n))
    return decls


def spell(qt):
    """clang prints an adjusted va_list parameter as the builtin record, which cannot be
    named in C; spell it as va_list again (same adjusted type)."""
    return qt.replace("struct __va_list_tag *", "va_list")


def spellable(qt):
    return not any(m in qt for m in ANON_MARKERS)


class Probe:
    """Collects probe lines; each line prints exactly one item."""

    def __init__(self):
        self.lines = []      # (key or None, C source line)
        self.keys = set()
        self.counts = {"structs": 0, "members": 0, "typedefs": 0, "enums": 0,
                       "enumerators": 0, "functions": 0, "macros": 0, "macro_values": 0}

    def item(self, key, code):
        if key in self.keys:
            return
        self.keys.add(key)
        self.lines.append((key, code))

    def raw(self, code):
        self.lines.append((None, code))


def add_members(p, tag, rec, prefix):
    last_record = None
    for n in rec.get("inner", []) or []:
        kind = n.get("kind")
        if kind == "RecordDecl":
            last_record = n
            continue
        if kind != "FieldDecl":
            continue
        name = n.get("name")
        qt = n["type"]["qualType"]
        if not name:
            # C11 anonymous member: its members belong to the enclosing record.
            if last_record is not None:
                add_members(p, tag, last_record, prefix)
            continue
        path = prefix + name
        key = "%s.%s" % (tag.replace(" ", ":"), path)
        p.counts["members"] += 1
        p.item(key + ".offset", 'PU("%s.offset", offsetof(%s, %s));' % (key, tag, path))
        p.item(key + ".size", 'PU("%s.size", sizeof(((%s *)0)->%s));' % (key, tag, path))
        if spellable(qt):
            p.item(key + ".type", 'PU("%s.type", __builtin_types_compatible_p('
                   '__typeof__(((%s *)0)->%s), %s));' % (key, tag, path, spell(qt)))
        elif last_record is not None:
            add_members(p, tag, last_record, path + ".")


def add_decls(p, decls):
    """Adds every reference declaration; returns {function name: its type}."""
    seen_funcs = {}
    for _hdr, n in decls:
        kind = n.get("kind")
        if kind == "RecordDecl" and n.get("completeDefinition") and n.get("name"):
            tag = "%s %s" % (n["tagUsed"], n["name"])
            key = tag.replace(" ", ":")
            p.counts["structs"] += 1
            p.item(key + ".size", 'PU("%s.size", sizeof(%s));' % (key, tag))
            p.item(key + ".align", 'PU("%s.align", _Alignof(%s));' % (key, tag))
            add_members(p, tag, n, "")
        elif kind == "TypedefDecl":
            name = n["name"]
            qt = n["type"]["qualType"]
            p.counts["typedefs"] += 1
            p.item("typedef:%s.size" % name, 'PU("typedef:%s.size", sizeof(%s));' % (name, name))
            p.item("typedef:%s.align" % name,
                   'PU("typedef:%s.align", _Alignof(%s));' % (name, name))
            if spellable(qt):
                p.item("typedef:%s.type" % name,
                       'PU("typedef:%s.type", __builtin_types_compatible_p(%s, %s));'
                       % (name, name, spell(qt)))
        elif kind == "EnumDecl":
            if n.get("name"):
                p.counts["enums"] += 1
                tag = "enum " + n["name"]
                p.item("enum:%s.size" % n["name"],
                       'PU("enum:%s.size", sizeof(%s));' % (n["name"], tag))
            for c in n.get("inner", []) or []:
                if c.get("kind") == "EnumConstantDecl":
                    p.counts["enumerators"] += 1
                    e = c["name"]
                    p.item("enumerator:" + e, 'PI("enumerator:%s", %s);' % (e, e))
        elif kind == "FunctionDecl":
            name = n["name"]
            if name in seen_funcs:
                continue
            qt = spell(n["type"]["qualType"])
            seen_funcs[name] = qt
            p.counts["functions"] += 1
            p.item("function:%s.type" % name,
                   'PU("function:%s.type", __builtin_types_compatible_p(__typeof__(%s), %s));'
                   % (name, name, qt))
            if n.get("storageClass") == "static":
                # static inline helpers: make sure they are still callable as such.
                p.item("function:%s.static" % name,
                       'PU("function:%s.static", sizeof(&%s) == sizeof(void (*)(void)));'
                       % (name, name))
    return seen_funcs


# --------------------------------------------------------------------------
# Macros
# --------------------------------------------------------------------------
DEFINE_RE = re.compile(r"^#define\s+([A-Za-z_][A-Za-z0-9_]*)(\([^)]*\))?\s?(.*)$")


def macro_table(clang, inc, includes, work, stem):
    src = os.path.join(work, stem + ".c")
    with open(src, "w") as f:
        f.write(tu_text(includes))
    r = run([clang, "-E", "-dM", "-std=gnu11", "-I" + inc, src])
    if r.returncode != 0:
        sys.exit("clang -E -dM failed:\n" + r.stdout)
    table = {}
    for line in r.stdout.splitlines():
        m = DEFINE_RE.match(line)
        if m:
            table[m.group(1)] = (m.group(2), m.group(3).strip())
    return table


def failing_lines(cc, src, inc, extra=()):
    """Compiles src; returns the set of its line numbers that have errors."""
    # Report every error, not just the first few (the option is spelled per compiler).
    # gcc must report errors at the expansion site, not inside the macro definition.
    if "clang" in os.path.basename(cc):
        flags = ["-ferror-limit=0"]
    else:
        flags = ["-fmax-errors=0", "-ftrack-macro-expansion=0"]
    r = run([cc, "-std=gnu11", "-w", "-fsyntax-only", "-I" + inc] + flags + list(extra) + [src])
    if r.returncode == 0:
        return set()
    base = re.escape(os.path.basename(src))
    bad = set(int(m.group(1)) for m in
              re.finditer(r"(?m)^(?:[^\s:]*/)?" + base + r":(\d+):\d+: (?:fatal )?error", r.stdout))
    if not bad:
        sys.exit("cannot attribute compile errors in %s:\n%s" % (src, r.stdout))
    return bad


def classify(cc, inc, names, work, stem, template, prelude):
    """Returns the names for which the template line compiles against inc
    ('@' in the template stands for the macro name, '#' for a unique number)."""
    ok = list(names)
    for _ in range(10):
        src = os.path.join(work, stem + ".c")
        with open(src, "w") as f:
            f.write(prelude)
            first = prelude.count("\n") + 1
            for i, n in enumerate(ok):
                f.write(template.replace("@", n).replace("#", str(i)) + "\n")
        bad = failing_lines(cc, src, inc)
        if not bad:
            return ok
        ok = [n for i, n in enumerate(ok) if (first + i) not in bad]
    sys.exit("macro classification did not converge for " + stem)


def add_macros(p, clang, cc, ref_inc, work, functions):
    full = macro_table(clang, ref_inc, TU_INCLUDES, work, "macros_full")
    base = macro_table(clang, ref_inc, BASELINE_INCLUDES, work, "macros_base")
    names = []
    for name, (params, body) in sorted(full.items()):
        if base.get(name) == (params, body):
            continue
        if params is None and body == "" and GUARD_RE.match(name):
            continue  # include guard: allowed to differ
        names.append((name, params, body))
    # Classification uses clang: gcc folds e.g. ("string" || 1) into a constant.
    prelude = tu_text(TU_INCLUDES) + "void probe_fn(void);\n"
    objlike = [n for n, params, body in names if params is None and body != ""]
    # Aliases of functions (e.g. dat_ib_post_recv_ud): compare the function type.
    aliases = [(n, body) for n, params, body in names if params is None and body in functions]
    objlike = [n for n in objlike if n not in set(a for a, _ in aliases)]

    ice = classify(clang, ref_inc, objlike, work, "cls_ice",
                   '_Static_assert((@) || 1, "ice");', prelude)
    rest = [n for n in objlike if n not in set(ice)]
    strings = classify(clang, ref_inc, rest, work, "cls_str",
                       'static const char *probe_s# = "" @;', prelude)
    rest = [n for n in rest if n not in set(strings)]
    scalars = classify(clang, ref_inc, rest, work, "cls_scalar",
                       'void probe_f#(void) { (void)(unsigned long long)(__UINTPTR_TYPE__)(@); }',
                       prelude)
    rest = [n for n in rest if n not in set(scalars)]
    sized = classify(clang, ref_inc, rest, work, "cls_size",
                     'static const unsigned long probe_z# = sizeof(@);', prelude)

    for name, _params, _body in names:
        p.counts["macros"] += 1
        p.raw("#ifdef %s" % name)
        p.item("macro:%s.defined" % name, 'PU("macro:%s.defined", 1);' % name)
        p.raw("#else")
        p.raw('PU("macro:%s.defined", 0);' % name)
        p.raw("#endif")
    for name, target in aliases:
        p.counts["macro_values"] += 1
        p.item("macro:%s.type" % name,
               'PU("macro:%s.type", __builtin_types_compatible_p(__typeof__(%s), %s));'
               % (name, name, functions[target]))
    for name in ice:
        p.counts["macro_values"] += 1
        p.item("macro:" + name, 'PI("macro:%s", (%s));' % (name, name))
    for name in strings:
        p.counts["macro_values"] += 1
        p.item("macro:" + name, 'PS("macro:%s", %s);' % (name, name))
    for name in scalars:
        p.counts["macro_values"] += 1
        p.item("macro:" + name, 'PU("macro:%s", (unsigned long long)(__UINTPTR_TYPE__)(%s));'
               % (name, name))
    for name in sized:
        p.counts["macro_values"] += 1
        p.item("macro:%s.size" % name, 'PU("macro:%s.size", sizeof(%s));' % (name, name))
    return names


# Macros whose expansion deliberately differs from the reference, and why. Everything
# else must expand to the same tokens.
KNOWN_EXPANSION_DIFFERENCES = {
    "DAT_IA_HA_RELATED": "reference defines it object-like by mistake (space before the "
                         "parameter list) and names a slot that does not exist",
    "dat_ib_collective_set_clock": "reference passes READ_CLOCK_OP and an undefined "
                                   "'user_contex'",
    "dat_ib_collective_read_clock": "reference has an unbalanced ')'",
    "dat_ib_collective_gatherv": "reference uses 'recvbuf', which is not a parameter",
    "dat_ib_collective_alltoallv": "reference uses 'senddispls', which is not a parameter",
    "dat_ib_start_counter": "reference casts to the non-existent DAT_COUNTER_TYPE",
    "dat_ib_stop_counter": "reference casts to the non-existent DAT_COUNTER_TYPE",
    "dat_ib_query_counters": "argument parenthesised",
    "dat_ib_print_counters": "argument parenthesised",
    "dat_ib_open_query": "cast to DAT_NAME_PTR without the ignored top-level const",
}
# Macros whose expansion differs only by __extension__ in front of DAT_CONTEXT casts.
EXTENSION_TOKEN = "__extension__"


def macro_expansions(clang, inc, names, work, stem):
    """Expands every macro (with placeholder arguments); returns {name: tokens}."""
    src = os.path.join(work, stem + ".c")
    with open(src, "w") as f:
        f.write(tu_text(TU_INCLUDES))
        for name, params, _body in names:
            call = name
            if params is not None:
                plist = [x.strip() for x in params[1:-1].split(",") if x.strip()]
                call += "(" + ", ".join("abi_arg%d" % i for i in range(len(plist))) + ")"
            f.write("abi_marker_begin %s %s abi_marker_end\n" % (name, call))
    r = run([clang, "-E", "-P", "-std=gnu11", "-I" + inc, src])
    if r.returncode != 0:
        sys.exit("clang -E failed for " + stem + ":\n" + r.stdout)
    out = {}
    for m in re.finditer(r"abi_marker_begin\s+(\w+)(.*?)abi_marker_end", r.stdout, re.S):
        out.setdefault(m.group(1), re.sub(r"\s+", "", m.group(2)))
    return out


def add_expansions(clang, ref, ours, names, work):
    """Appends macro expansion items to ref.txt and ours.txt; returns how many."""
    exp_ref = macro_expansions(clang, ref, names, work, "expand_ref")
    exp_ours = macro_expansions(clang, ours, names, work, "expand_ours")
    n = 0
    with open(os.path.join(work, "ref.txt"), "a") as fr, \
            open(os.path.join(work, "ours.txt"), "a") as fo:
        for name, _params, _body in names:
            key = "macro:%s.expansion" % name
            a = exp_ref.get(name, "<not expanded>")
            b = exp_ours.get(name, "<not expanded>")
            if b.replace(EXTENSION_TOKEN, "") == a:
                b = a
            elif name in KNOWN_EXPANSION_DIFFERENCES:
                a = b = "<deliberately differs: %s>" % KNOWN_EXPANSION_DIFFERENCES[name]
            fr.write("%s=%s\n" % (key, a))
            fo.write("%s=%s\n" % (key, b))
            n += 1
    return n


# --------------------------------------------------------------------------
# The probe program
# --------------------------------------------------------------------------
PROBE_HEAD = r"""/* Generated by gen_abi_probe.py from the reference DAT 2.0 headers. */
#include <stdio.h>
#include <stddef.h>
#include <stdarg.h>
%s
#define PU(k, v) printf("%%s=%%llu\n", k, (unsigned long long)(v))
#define PI(k, v) printf("%%s=0x%%llx size=%%zu signed=%%d\n", k, (unsigned long long)(v), \
                        sizeof(v), (int)((__typeof__(v))-1 < 0))
#define PS(k, v) printf("%%s=\"%%s\"\n", k, (v))
#define PM(k) printf("%%s=<does not compile>\n", k)
int main(void)
{
"""


def write_probe(path, lines):
    """Writes the probe; returns the line number of the first item."""
    head = PROBE_HEAD % tu_text(TU_INCLUDES)
    with open(path, "w") as f:
        f.write(head)
        for _key, code in lines:
            f.write(code + "\n")
        f.write("    return 0;\n}\n")
    return head.count("\n") + 1


def build_and_run(cc, inc, lines, work, stem):
    """Builds the probe against inc, replacing items that fail with PM(); runs it."""
    lines = list(lines)
    exe = os.path.join(work, stem)
    src = exe + ".c"
    dep = exe + ".d"
    dropped = []
    for _ in range(20):
        first = write_probe(src, lines)
        bad = failing_lines(cc, src, inc)
        if not bad:
            break
        for ln in sorted(bad):
            idx = ln - first
            if 0 <= idx < len(lines) and lines[idx][0] is not None:
                key = lines[idx][0]
                dropped.append(key)
                lines[idx] = (key, 'PM("%s");' % key)
            else:
                sys.exit("%s: error outside the probe items (line %d), see %s" % (stem, ln, src))
    else:
        sys.exit("%s: probe does not converge" % stem)
    r = run([cc, "-std=gnu11", "-w", "-I" + inc, "-MD", "-MF", dep, src, "-o", exe])
    if r.returncode != 0:
        sys.exit("%s: build failed:\n%s" % (stem, r.stdout))
    out = run([exe])
    if out.returncode != 0:
        sys.exit("%s: probe exited with %d" % (stem, out.returncode))
    with open(os.path.join(work, stem + ".txt"), "w") as f:
        f.write(out.stdout)
    return dep, dropped


def dat2_headers_used(depfile):
    text = open(depfile).read().replace("\\\n", " ")
    _target, _, deps = text.partition(":")
    return [os.path.realpath(d) for d in deps.split() if "/dat2/" in d]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref-include", default="/usr/include",
                    help="directory holding the reference dat2/")
    ap.add_argument("--ours-include", required=True, help="directory holding our dat2/")
    ap.add_argument("--work", required=True, help="scratch directory (recreated)")
    ap.add_argument("--clang", default="clang")
    ap.add_argument("--cc", default=None, help="compiler for the probe (default: --clang)")
    a = ap.parse_args()
    cc = a.cc or a.clang
    ours = os.path.realpath(a.ours_include)
    ref = os.path.realpath(a.ref_include)

    if os.path.isdir(a.work):
        shutil.rmtree(a.work)
    os.makedirs(a.work)

    # 1. Same file names: otherwise <dat2/x.h> could silently resolve to the reference.
    ref_names = sorted(os.path.basename(h) for h in glob.glob(os.path.join(ref, "dat2", "*.h")))
    if not ref_names:
        sys.exit("no reference headers under " + os.path.join(ref, "dat2"))
    missing = [h for h in ref_names if not os.path.isfile(os.path.join(ours, "dat2", h))]
    if missing:
        sys.exit("headers missing from %s/dat2: %s" % (ours, " ".join(missing)))

    # 2. Enumerate the reference.
    p = Probe()
    decls = load_ast(a.clang, ref, a.work)
    seen_headers = sorted(set(h for h, _ in decls))
    functions = add_decls(p, decls)
    macro_names = add_macros(p, a.clang, cc, ref, a.work, functions)

    # 3. Build and run against both header sets.
    ref_dep, ref_dropped = build_and_run(cc, ref, p.lines, a.work, "ref")
    if ref_dropped:
        sys.exit("generator bug: items fail against the reference: " + " ".join(ref_dropped))
    ours_dep, ours_dropped = build_and_run(cc, ours, p.lines, a.work, "ours")

    # 4. Every dat2 header the "ours" build read must come from our tree.
    foreign = [h for h in dat2_headers_used(ours_dep)
               if not h.startswith(os.path.join(ours, "dat2") + os.sep)]
    if foreign:
        sys.exit("the build against %s read foreign headers: %s" % (ours, " ".join(foreign)))
    leaked = [h for h in dat2_headers_used(ref_dep) if h.startswith(ours + os.sep)]
    if leaked:
        sys.exit("the reference build read our headers: " + " ".join(leaked))

    # 5. Sanity of the reference run: every type check must hold there.
    ref_txt = open(os.path.join(a.work, "ref.txt")).read().splitlines()
    wrong = [l for l in ref_txt if re.match(r"^[^=]*\.type=0$", l)]
    if wrong:
        sys.exit("generator bug: type checks fail against the reference: " + " ".join(wrong))

    # 6. Token-level expansion of every macro (function-like ones included).
    expansions = add_expansions(a.clang, ref, ours, macro_names, a.work)

    c = p.counts
    print("HEADERS_WITH_DECLS %s" % " ".join(seen_headers))
    print("COUNTS structs=%d members=%d typedefs=%d enums=%d enumerators=%d functions=%d "
          "macros=%d macro_values=%d expansions=%d items=%d"
          % (c["structs"], c["members"], c["typedefs"], c["enums"], c["enumerators"],
             c["functions"], c["macros"], c["macro_values"], expansions,
             len(p.keys) + expansions))
    if ours_dropped:
        print("DOES_NOT_COMPILE %s" % " ".join(ours_dropped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
