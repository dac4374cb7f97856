#!/usr/bin/env python3
"""The C reference covers the public headers: builds it with scripts/reference
and reads Doxygen's XML. Fails, naming each, when
- a CTORCH_API function or an enum of include/ctorch.h, include/ctorch_python.h
  or the generated ctorch_ops.h is not in the reference;
- a function, enum, typedef, macro or struct there has no documentation;
- a declaration of ctorch.h or ctorch_python.h is in no group (an area of the
  header: a new function goes into its area, not after the last one);
- Doxygen warned about anything (a comment it could not read renders wrong).
--self-test first proves, on a scratch header, that each of these is caught.
Exits 77 (skipped) without doxygen."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

API_FN = re.compile(r"CTORCH_API\b[^;{]*?\b(ctorch_\w+)\s*\(")
ENUM = re.compile(r"(?m)^typedef enum (\w+)")
KINDS = ("function", "enum", "typedef", "define")


def declared(paths):
    """CTORCH_API functions and enums the headers declare."""
    fns, enums = set(), set()
    for p in paths:
        text = open(p).read()
        fns.update(API_FN.findall(text))
        enums.update(ENUM.findall(text))
    return fns, enums


def _described(node):
    return any("".join(node.find(tag).itertext()).strip() for tag in ("briefdescription", "detaileddescription")
               if node.find(tag) is not None)


def read_xml(xml_dir):
    """{(kind, name): (documented, file)} for every member, the (kind, name)
    of each group's members, and the undocumented structs."""
    members, grouped, bare_structs = {}, set(), []
    for f in sorted(os.listdir(xml_dir)):
        if not f.endswith(".xml") or f == "index.xml":
            continue
        root = ET.parse(os.path.join(xml_dir, f)).getroot()
        for cd in root.iter("compounddef"):
            kind = cd.get("kind")
            if kind == "struct" and not _described(cd):
                bare_structs.append(cd.findtext("compoundname"))
            for md in cd.iter("memberdef"):
                if md.get("kind") not in KINDS:
                    continue
                name = md.findtext("name")
                loc = md.find("location")
                src = os.path.basename(loc.get("file")) if loc is not None else ""
                key = (md.get("kind"), name)
                if kind == "group":
                    grouped.add(key)
                if kind in ("file", "group"):
                    prev = members.get(key)
                    members[key] = (_described(md) or (prev is not None and prev[0]), src)
    return members, grouped, bare_structs


def check(headers, xml_dir, warnings_file):
    errs = []
    fns, enums = declared(headers)
    members, grouped, bare_structs = read_xml(xml_dir)
    for n in sorted(fns):
        if ("function", n) not in members:
            errs.append(f"function {n} is not in the reference")
    for n in sorted(enums):
        if ("enum", n) not in members:
            errs.append(f"enum {n} is not in the reference")
    hand = {os.path.basename(h) for h in headers if os.path.basename(h) != "ctorch_ops.h"}
    for (kind, n), (documented, src) in sorted(members.items()):
        if not documented:
            errs.append(f"{kind} {n} ({src}) has no documentation")
        if src in hand and (kind, n) not in grouped:
            errs.append(f"{kind} {n} ({src}) is in no group: put it in its area of the header")
    errs += [f"struct {s} has no documentation" for s in bare_structs]
    if warnings_file and os.path.exists(warnings_file):
        errs += ["doxygen: " + ln.rstrip() for ln in open(warnings_file) if ln.strip()]
    return errs


def build(src, build_dir, out):
    subprocess.run([os.path.join(src, "scripts", "reference"), build_dir, "--out", out], check=True)
    return os.path.join(out, "xml"), os.path.join(out, "warnings.txt")


SCRATCH = """/** @file t.h */
/** @defgroup a An area
 * @{ */
/** Documented. */
CTORCH_API int ctorch_good(void);
CTORCH_API int ctorch_bare(void);
/** @} */
/** Outside every group. */
CTORCH_API int ctorch_stray(void);
/** Documented, outside every group. */
typedef enum ctorch_e { CTORCH_E_A = 0 } ctorch_e;
"""


def self_test(src):
    """The checks catch an undocumented function, a declaration outside every
    group and a function missing from the reference (with the reference's own
    configuration)."""
    with tempfile.TemporaryDirectory() as d:
        h = os.path.join(d, "t.h")
        open(h, "w").write(SCRATCH)
        conf = open(os.path.join(src, "docs", "reference", "Doxyfile")).read()
        open(os.path.join(d, "Doxyfile"), "w").write(
            conf + f"\nINPUT = {h}\nOUTPUT_DIRECTORY = {d}\nGENERATE_HTML = NO\nWARNINGS = NO\n")
        subprocess.run(["doxygen", os.path.join(d, "Doxyfile")], check=True, cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open(h, "a").write("CTORCH_API int ctorch_missing(void);\n")  # declared after the reference was made
        errs = "\n".join(check([h], os.path.join(d, "xml"), None))
    want = ["function ctorch_bare (t.h) has no documentation", "function ctorch_stray (t.h) is in no group",
            "enum ctorch_e (t.h) is in no group", "function ctorch_missing is not in the reference"]
    missed = [w for w in want if w not in errs]
    if missed or "ctorch_good" in errs:
        sys.exit("check_reference self-test: expected to report " + "; ".join(missed or ["not ctorch_good"]) +
                 f"\nreported:\n{errs}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--build", required=True, help="the build whose generated/ctorch_ops.h is documented")
    ap.add_argument("--out", required=True, help="where the reference is built")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if not shutil.which("doxygen"):
        print("skipped: doxygen not found (scripts/deps --test installs it)")
        return 77
    if a.self_test:
        self_test(a.src)
    headers = [os.path.join(a.src, "include", "ctorch.h"), os.path.join(a.src, "include", "ctorch_python.h"),
               os.path.join(a.build, "generated", "ctorch_ops.h")]
    errs = check(headers, *build(a.src, a.build, a.out))
    for e in errs:
        print(e)
    fns, enums = declared(headers)
    print(f"reference: {len(fns)} functions, {len(enums)} enums; {len(errs)} problems")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
