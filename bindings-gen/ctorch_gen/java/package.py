"""Java binding: writes the Maven project (org.ctorch, a named module) from
api.json, one file set per emitter module of this package, beside the
hand-written runtime copied from bindings-gen/java/."""
from __future__ import annotations

import os

from ..apimodel import Api
from . import enums, handles, hfuncs, info, nn, ops, raw

SRC = os.path.join("src", "main", "java", "org", "ctorch")


def generate(doc: Api, out: str, build_lib, include, copy_tree, write_if_changed, here: str) -> None:
    copy_tree(os.path.join(here, "java"), out)
    with open(os.path.join(here, "java", "pom.xml.in"), encoding="utf-8") as f:
        pom = f.read()
    write_if_changed(os.path.join(out, "pom.xml"), pom.replace("@CTORCH_VERSION@", doc.ctorch_version)
                     .replace("@TORCH_ABI@", doc.library.torch_abi))
    rawdir = os.path.join(out, SRC, "raw")
    write_if_changed(os.path.join(rawdir, "ApiInfo.java"), info.emit(doc))
    if build_lib:
        write_if_changed(os.path.join(out, "src", "main", "resources", "org", "ctorch", "raw", "build.properties"),
                         info.build_properties(build_lib))
    for name, text in raw.emit(doc).items():
        write_if_changed(os.path.join(rawdir, name), text)
    files, _skipped = ops.emit(doc)
    capi, methods, _raw_only = hfuncs.emit(doc)
    write_if_changed(os.path.join(out, SRC, "CApi.java"), capi)
    for emitter in (files, enums.emit(doc), handles.emit(doc, methods)):
        for name, text in emitter.items():
            write_if_changed(os.path.join(out, SRC, name), text)
    for name, text in nn.emit(doc).items():
        write_if_changed(os.path.join(out, SRC, "nn", name), text)
