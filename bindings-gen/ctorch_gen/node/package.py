"""Node binding: writes the npm package from api.json, one file per emitter
module of this package."""
from __future__ import annotations

import os
import json

from ..apimodel import Api
from .capi import emit_api, emit_capi, emit_ops
from .dts import emit as emit_dts
from .nn import emit as emit_nn


def generate(doc: Api, out: str, build_lib, include, copy_tree, write_if_changed, here: str) -> None:
    copy_tree(os.path.join(here, "node"), out)
    write_if_changed(os.path.join(out, "capi.js"), emit_capi(doc))
    write_if_changed(os.path.join(out, "ops.js"), emit_ops(doc))
    write_if_changed(os.path.join(out, "api.js"), emit_api(doc))
    write_if_changed(os.path.join(out, "nn_classes.js"), emit_nn(doc))
    write_if_changed(os.path.join(out, "index.d.ts"), emit_dts(doc, here))
    write_if_changed(os.path.join(out, "build_config.json"), json.dumps({"lib": build_lib}) + "\n")
    with open(os.path.join(here, "node", "package.json"), encoding="utf-8") as f:
        pkg = json.load(f)
    pkg["version"] = doc.ctorch_version
    write_if_changed(os.path.join(out, "package.json"), json.dumps(pkg, indent=2) + "\n")
