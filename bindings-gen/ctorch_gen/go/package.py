"""Go binding: writes the Go module (package ctorch and ctorch/nn) from api.json,
one file per emitter module of this package."""
from __future__ import annotations

import os

from ..apimodel import Api
from .exports import emit as emit_exports, scan
from .hfuncs import emit_hfuncs
from .names import GO_MODULE, RUNTIME_NAMES
from .nn import emit as emit_nn
from .ops import emit_capi, emit_cgo, emit_enums, emit_ops
from .opts import emit as emit_opts
from .tramp import Trampolines


def generate(doc: Api, out: str, build_lib, include: str, copy_tree, write_if_changed, here: str) -> None:
    """The module in out. With build_lib, cgo links that build tree's library
    (-L, an rpath: the build's own bindings/go, for its tests); without, it
    asks pkg-config for ctorch (the packaged module: scripts/package go)."""
    with open(os.path.join(here, "go", "go.mod")) as fh:
        if fh.readline().split() != ["module", GO_MODULE]:
            raise ValueError(f"bindings-gen/go/go.mod does not name the module {GO_MODULE} (ctorch_gen/go/names.py GO_MODULE)")
    copy_tree(os.path.join(here, "go"), out)
    includes = [include] if include else []
    if build_lib:
        includes.append(os.path.join(os.path.dirname(build_lib), "generated"))
    write_if_changed(os.path.join(out, "cgo_gen.go"), emit_cgo(build_lib, includes))
    # ctorch/nn (module classes) makes cgo calls and callbacks of its own: the same flags.
    write_if_changed(os.path.join(out, "nn", "cgo_gen.go"), emit_cgo(build_lib, includes, "nn"))
    write_if_changed(os.path.join(out, "nn", "kinds_gen.go"), emit_nn(doc))
    write_if_changed(os.path.join(out, "enums_gen.go"), emit_enums(doc))
    tramp = Trampolines()
    write_if_changed(os.path.join(out, "ops_gen.go"), emit_ops(doc, tramp))
    write_if_changed(os.path.join(out, "ops_tramp_gen.h"), tramp.header())
    write_if_changed(os.path.join(out, "ops_tramp_gen.c"), tramp.source())
    write_if_changed(os.path.join(out, "capi_gen.go"), emit_capi(doc))
    write_if_changed(os.path.join(out, "hfuncs_gen.go"), emit_hfuncs(doc))
    # The options form of every op with defaults, named clear of every other exported name.
    names = scan(out, exclude=("ops_opts_gen.go",))
    write_if_changed(os.path.join(out, "ops_opts_gen.go"), emit_opts(doc, set(RUNTIME_NAMES) | set(names[0]) | set(names[1])))
    # Last: the lists of exported functions and types, read from the files written above.
    write_if_changed(os.path.join(out, "exports_gen_test.go"), emit_exports(out, "ctorch"))
    write_if_changed(os.path.join(out, "nn", "exports_gen_test.go"), emit_exports(os.path.join(out, "nn"), "nn"))
    write_if_changed(os.path.join(out, "lm", "exports_gen_test.go"), emit_exports(os.path.join(out, "lm"), "lm"))
