"""The hand-written half of api.json: ctorch.h's declarations (parsed by
cheader) with the meaning of each parameter made explicit.

The header states most of it through its contract, which these rules
apply (docs/api-json.md lists them for binding authors):
- out-parameters come first: the leading run of non-const pointers;
- a pointer directly followed by a size_t is an array of that length (a
  run of pointers followed by one size_t all share it), a void pointer
  followed by a size_t a byte buffer;
- a handle returned through an out-parameter is NEW (freed by its type's
  `<type>_free`), `char **` outputs are new strings (ctorch_string_free),
  `const char **` outputs borrowed text; handles passed in are BORROWED,
  except the argument of a `*_free` function, which it frees;
- a parameter may be NULL when the doc comment says so ("p may be NULL",
  "NULL = ...", "NULL-safe", "(may be NULL)", "p (NULL = the defaults");
- a handle output may be NULL on success when the doc says so ("*out NULL
  if it is None", "*out = NULL (and CTORCH_OK) when", "NULL for an
  undefined tensor"): null_result;
- an int is a boolean by its name or the doc's wording ("1 if", "0/1",
  "Whether", "p = 0", "(nonzero = true)", "X (1) or Y (0)"), and holds an
  enum when the doc says "p < 0 = keep, else a ... ctorch_dtype".
tests/test_api_header.py checks these against the header's wording by
broader rules, so a declaration worded another way fails there.
Doc-comment tags (`@nullable`, `@borrowed`, `@consumes`, `@frees`) and the
OVERRIDES table below say what the rules cannot. check() refuses a
declaration the rules cannot classify, so a new function in the header
fails the build until it is described.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

from .cheader import CType, Callback, Function, Header, Param

# C scalar types: (kind, size, signed).
PRIMITIVES = {
    "int": ("int", 4, True), "int32_t": ("int", 4, True), "int64_t": ("int", 8, True),
    "uint64_t": ("int", 8, False), "uint32_t": ("int", 4, False), "uint8_t": ("int", 1, False),
    "size_t": ("int", 8, False), "double": ("float", 8, True), "float": ("float", 4, True),
    "char": ("char", 1, True), "void": ("void", 0, False),
}

_LENGTH_NAME = re.compile(r"^(n|n_\w+|\w+_len|len|cap|ndim|nargs|nbytes|dst_bytes)$")

# What the rules above cannot see, per function and parameter. Keys:
# nullable, ownership ("consumed": ctorch owns it after success; "freed"),
# lifetime (what a borrowed output's validity is tied to), array (length
# parameter), direction, null_result (a handle output that may be NULL on
# success).
# Scope handles end with their *_leave function, which frees them.
SCOPE_LEAVE = {"ctorch_autograd_scope": "ctorch_autograd_scope_leave",
               "ctorch_stream_scope": "ctorch_stream_scope_leave",
               "ctorch_autocast_scope": "ctorch_autocast_scope_leave"}

OVERRIDES: Dict[str, Dict[str, dict]] = {
    "ctorch_tensor_from_blob": {
        "data": {"ownership": "consumed", "lifetime": "released through release(ctx) once ctorch is done"},
        "strides": {"array": "ndim", "nullable": True}, "sizes": {"nullable": True},
        "release": {"nullable": True},
        "ctx": {"nullable": True},
    },
    "ctorch_tensor_data_ptr": {"out": {"ownership": "borrowed", "lifetime": "t"}},
    "ctorch_tensor_dict_key": {"out": {"ownership": "borrowed", "lifetime": "d"}},
    "ctorch_tensor_dict_metadata_key": {"out": {"ownership": "borrowed", "lifetime": "d"}},
    "ctorch_tensor_dict_metadata_value": {"out": {"ownership": "borrowed", "lifetime": "d"}},
    "ctorch_tensor_dict_metadata_find": {"out": {"ownership": "borrowed", "lifetime": "d"}},
    "ctorch_value_to_string": {"out": {"ownership": "borrowed", "lifetime": "v"}},
    "ctorch_from_dlpack": {"src": {"ownership": "consumed"}},
    "ctorch_from_dlpack_versioned": {"src": {"ownership": "consumed"}},
    "ctorch_to_dlpack": {"out": {"ownership": "new", "free": "(*out)->deleter(*out)"}},
    "ctorch_to_dlpack_versioned": {"out": {"ownership": "new", "free": "(*out)->deleter(*out)"}},
    "ctorch_autograd_scope_leave": {"scope": {"ownership": "freed", "when": "always"}},
    "ctorch_stream_scope_leave": {"scope": {"ownership": "freed", "when": "always"}},
    "ctorch_autocast_scope_leave": {"scope": {"ownership": "freed", "when": "always"}},
    # Unlike the mode scopes, a handle scope left from another thread (or
    # twice) is refused and stays open: released only on success.
    "ctorch_handle_scope_leave": {"scope": {"ownership": "freed", "when": "on success"}},
    "ctorch_autograd_function_apply": {
        # The caller chooses how many outputs the function has (forward
        # computes exactly that many): every entry gets a NEW handle.
        "outputs": {"buffer_size": {"unit": "elements", "rule": "chosen", "length": "n_outputs"}},
        "user_data": {"nullable": True, "lifetime": "until release(user_data) is called"},
        "release": {"nullable": True}, "backward": {"nullable": False},
    },
    "ctorch_data_loader_next": {"targets": {"nullable": True, "null_result": True}, "data": {"null_result": True}},
    "ctorch_tensor_grad": {"out": {"null_result": True}},
    "ctorch_tensor_list_get": {"out": {"null_result": True}},
    "ctorch_value_to_tensor": {"out": {"null_result": True}},
    "ctorch_data_loader_new": {"targets": {"nullable": True}, "data": {"nullable": False}},
    "ctorch_dist_init_from_env": {"local_rank": {"nullable": True}, "backend": {"nullable": True}},
    "ctorch_store_set": {"value": {"nullable": True}},
    "ctorch_store_get": {"buf": {"nullable": True}},
    "ctorch_tensor_sizes": {"out": {"buffer_size": {
        "unit": "elements", "rule": "query", "product": [{"call": "ctorch_tensor_dim", "args": {"t": "t"}}]}}},
    "ctorch_tensor_strides": {"out": {"buffer_size": {
        "unit": "elements", "rule": "query", "product": [{"call": "ctorch_tensor_dim", "args": {"t": "t"}}]}}},
    "ctorch_tensor_from_data": {"sizes": {"nullable": True}},
    "ctorch_tensor_backward": {"gradient": {"nullable": True}, "inputs": {"nullable": True}},
    "ctorch_autograd_grad": {"grad_outputs": {"nullable": True}},
    "ctorch_module_load": {"map_location": {"nullable": True}},
    "ctorch_module_load_ex": {"map_location": {"nullable": True}},
    "ctorch_module_load_from_buffer": {"map_location": {"nullable": True}},
    "ctorch_module_load_from_stream": {"map_location": {"nullable": True}},
    "ctorch_module_forward": {"args": {"nullable": True}},
    # Any registered operator by name: keyword names and values share nkw.
    "ctorch_op_call": {"args": {"nullable": True}, "kw_names": {"array": "nkw", "nullable": True},
                       "kw_values": {"array": "nkw", "nullable": True}},
    "ctorch_op_call_unchecked": {"args": {"nullable": True}, "kw_names": {"array": "nkw", "nullable": True},
                                 "kw_values": {"array": "nkw", "nullable": True}},
    "ctorch_op_find": {"overload": {"nullable": True}},
    "ctorch_op_list": {"prefix": {"nullable": True}},
    "ctorch_op_safety": {"why": {"nullable": True}},
    "ctorch_value_int_list": {"p": {"nullable": True}},
    "ctorch_module_run_method": {"args": {"nullable": True}},
    "ctorch_optimizer_new": {"options": {"nullable": True}},
    "ctorch_optimizer_add_param_group": {"options": {"nullable": True}},
    "ctorch_optimizer_new_v2": {"options": {"nullable": True}},
    "ctorch_optimizer_add_param_group_v2": {"options": {"nullable": True}},
    "ctorch_tensor_set_grad": {"grad": {"nullable": True}},
    "ctorch_tensor_copy_to": {"dst": {"direction": "out", "buffer_size": {
        "unit": "bytes", "rule": "query", "product": [
            {"call": "ctorch_tensor_numel", "args": {"t": "t"}},
            {"call": "ctorch_dtype_size", "args": {"dtype": {"call": "ctorch_tensor_dtype", "args": {"t": "t"}}}}]}}},
    # A list whose elements are NULL for inputs that did not take part (allow_unused).
    "ctorch_autograd_grad": {"out": {"elements_null_result": True}},
    "ctorch_init_calculate_fan_in_and_fan_out": {},
    # Outputs in the middle of the signature (after the inputs, as the
    # callback's), into a caller's array: up to max_outputs NEW handles, NULL
    # where Python returns None, the count written to *n_outputs; too small a
    # capacity fails and writes nothing (calling twice would run forward twice).
    "ctorch_nn_module_forward_n": {
        "inputs": {"elements_nullable": True},  # None inputs (LSTM's missing h_0)
        "outputs": {"direction": "out", "array": "max_outputs", "ownership": "new", "free": "ctorch_tensor_free",
                    "null_result": True,
                    "buffer_size": {"unit": "elements", "rule": "filled", "count": "n_outputs", "capacity": 16}},
        "n_outputs": {"direction": "out"},
    },
    # The same call on a child (module shortcuts): the same outputs.
    "ctorch_nn_module_forward_child_n": {
        "inputs": {"elements_nullable": True},
        "outputs": {"direction": "out", "array": "max_outputs", "ownership": "new", "free": "ctorch_tensor_free",
                    "null_result": True,
                    "buffer_size": {"unit": "elements", "rule": "filled", "count": "n_outputs", "capacity": 16}},
        "n_outputs": {"direction": "out"},
    },
    "ctorch_nn_module_forward_first": {"inputs": {"elements_nullable": True}},
    # shapes[i] is an array of ndims[i] sizes: a binding takes a list of shapes.
    "ctorch_nn_module_shape_check": {
        "shapes": {"element_length": "ndims"},
        "ndims": {"element_lengths_of": "shapes"},
    },
}


# State libtorch keeps per OS thread that a call begins and another ends
# (grad and autocast modes, the current stream, a profiler session, a trace,
# a CUDA graph capture): api.json's thread_state, so that a binding whose
# code may change OS threads between two calls (a Go goroutine) keeps the
# caller on one thread from the begin to the end. role: begin (from a
# successful call, `handle` holds state bound to the calling thread) or end
# (the state ends: "always", or "unless_refused": a call refused on its
# arguments, INVALID_ARGUMENT or TYPE, changes nothing and leaves it on).
THREAD_STATE = {
    "ctorch_autograd_scope_enter": {"role": "begin", "handle": "out"},
    "ctorch_autograd_scope_leave": {"role": "end", "handle": "scope", "ends": "always"},
    "ctorch_autocast_scope_enter": {"role": "begin", "handle": "out"},
    "ctorch_autocast_scope_leave": {"role": "end", "handle": "scope", "ends": "always"},
    "ctorch_stream_scope_enter": {"role": "begin", "handle": "out"},
    "ctorch_stream_scope_leave": {"role": "end", "handle": "scope", "ends": "always"},
    "ctorch_profiler_start": {"role": "begin", "handle": "out"},
    "ctorch_profiler_stop": {"role": "end", "handle": "p", "ends": "always"},
    "ctorch_profiler_free": {"role": "end", "handle": "p", "ends": "always"},
    "ctorch_tracer_begin": {"role": "begin", "handle": "trace"},
    "ctorch_tracer_finish": {"role": "end", "handle": "trace", "ends": "unless_refused"},
    "ctorch_tracer_finish_value": {"role": "end", "handle": "trace", "ends": "unless_refused"},
    "ctorch_tracer_abandon": {"role": "end", "handle": "trace", "ends": "always"},
    "ctorch_tracer_free": {"role": "end", "handle": "trace", "ends": "always"},
    "ctorch_cuda_graph_capture_begin": {"role": "begin", "handle": "g"},
    "ctorch_cuda_graph_capture_end": {"role": "end", "handle": "g", "ends": "always"},
    "ctorch_cuda_graph_free": {"role": "end", "handle": "g", "ends": "always"},
}


class DescribeError(ValueError):
    pass


def _doc_tags(doc: str) -> Dict[str, List[str]]:
    tags: Dict[str, List[str]] = {}
    for m in re.finditer(r"@(nullable|borrowed|consumes|frees)\s+([\w, ]+)", doc):
        # Names are separated by commas or spaces ("@nullable out_len, buf",
        # "@nullable args names modules"): both are written in the header.
        tags.setdefault(m.group(1), []).extend(x for x in re.split(r"[,\s]+", m.group(2)) if x)
    return tags


def _doc_says_nullable(doc: str, name: str) -> bool:
    n = r"`?" + re.escape(name) + r"`?"
    pats = [rf"\b{n}\s+(?:itself\s+)?may be NULL", rf"\b{n}\s*\((?:[^()]*?,\s*)?may be NULL",
            rf"\b{n}:?\s+NULL\b", rf"\band {n}, may be NULL", rf"\b{n}:?\s+\"[^\"]*\" or NULL",
            rf"\b{n}\s*\(NULL\b(?! entr)", rf"\b{n} are [^.;()]*\(may be NULL\b"]
    return any(re.search(p, doc) for p in pats)


def _doc_says_null_result(f, p) -> bool:
    """A handle output the doc says may be NULL on success: "*out NULL if it
    is None", "*out = NULL (and CTORCH_OK) when ...", "NULL if that element
    is undefined", "NULL for an undefined tensor" (not "(and *out = NULL)"
    after a failure status, nor "all NULL on failure")."""
    n = re.escape(p.name)
    if re.search(rf"(?<!and )\*{n}\s*(=\s*)?NULL\b(?! on failure)", f.doc):
        return True
    outs = [q for q in f.params if q.type and q.type.pointers == 1 and not q.type.const_pointee]
    return len(outs) >= 1 and outs[0].name == p.name and \
        re.search(r"\bNULL (if|for|when) (that element is undefined|an undefined tensor|it is None)", f.doc) is not None


def _doc_lifetime(f) -> str:
    """What a borrowed output (text, an address) lives as long as, from the
    doc comment: "static", "process", the parameter it is valid while, or
    "until the next call on this thread"."""
    doc = f.doc
    if re.search(r"\bstatic\b", doc, re.I):
        return "static"
    if "life of the process" in doc:
        return "process"
    m = re.search(r"valid (?:while|as long as) `?(\w+)`? lives", doc)
    if m and m.group(1) in {p.name for p in f.params}:
        return m.group(1)
    if re.search(r"[Vv]alid until this thread.s next failing call|until the next (failing )?call", doc):
        return "until the next failing call on this thread"
    raise DescribeError(f"{f.name}: a borrowed output whose lifetime the doc does not say "
                        "(\"static\", \"valid while X lives\", \"for the life of the process\")")


# int parameters and results that are booleans (0 false, nonzero true): by
# name (PyTorch's flag names), or by the doc comment's wording (below).
BOOL_NAMES = {"on", "train", "shuffle", "drop_last", "is_master", "requires_grad", "set_to_none", "retain_graph",
              "create_graph", "allow_unused", "has_batch", "previous", "nesterov", "amsgrad", "centered",
              "recurse", "strict", "persistent", "pin_memory", "only_trainable",
              # the language models' (transformers' names)
              "add_special", "parse_special", "skip_special", "all_logits", "add_generation_prompt"}


_BOOL_NAME = re.compile(r"^(enable_|is_|has_|use_|only_)|_enabled$|_if_|^(enabled|high_priority|stepped)$")


def _doc_says_bool(f, p, d) -> bool:
    """The doc comment's wording of a boolean: an output "1 if ...", "as
    0/1", "Whether ..."; an input "NAME = 0 ...", "NAME = 1 ...", "NAME
    (nonzero)", "(nonzero = true)", "X (1) or Y (0)"; or the one int of a
    function named *_bool (ctorch_value_bool, ctorch_tensor_item_bool)."""
    doc, n = f.doc, re.escape(p.name)
    ints = [q for q in f.params if q.type and q.type.text == "int"]
    if f.name.endswith("_bool") and len(ints) == 1:
        return True
    if d["direction"] == "out":
        return re.search(r"(^|: )1 (if|when)\b|\b0/1\b|^Whether\b", doc) is not None
    return any(re.search(x, doc) for x in (rf"\b{n} = [01]\b", rf"\b{n} \(nonzero", r"\(nonzero = true\)",
                                           rf"\b{n}\b[^.]*\(1\) or [^.]*\(0\)", rf"\({n}\) or [^.]*\(0\)"))


def _is_bool(f, p, d) -> bool:
    if d["type"].get("name") != "int" or d.get("pointer", 0) > 1:
        return False
    if p.name in BOOL_NAMES or _BOOL_NAME.search(p.name):
        return True
    return _doc_says_bool(f, p, d)


class Describer:
    def __init__(self, header: Header):
        self.h = header
        self.enums = {e.name for e in header.enums}
        self.structs = {s.name for s in header.structs}
        self.handles = {h.name: h for h in header.handles}
        self.callbacks = {c.name for c in header.callbacks}
        names = {f.name for f in header.functions}
        # A handle's free function is `<handle>_free` (ctorch_tensor ->
        # ctorch_tensor_free); a scope's is `<handle>_leave`
        # (ctorch_autograd_scope -> ctorch_autograd_scope_leave).
        self.free_of = {}
        for h in self.handles:
            for fn in (f"{h}_free", f"{h}_leave"):
                if fn in names:
                    self.free_of[h] = fn
                    break

    # ---- types ---------------------------------------------------------
    def type_info(self, t: CType) -> dict:
        b = t.base
        if b == "...":
            return {"kind": "variadic", "name": "..."}
        if b == "va_list":
            return {"kind": "va_list", "name": "va_list"}
        if b in self.handles:
            d = {"kind": "handle", "name": b}
        elif b in self.enums or b == "ctorch_status":
            d = {"kind": "enum", "name": b}
        elif b in self.structs:
            d = {"kind": "struct", "name": b}
        elif b in self.callbacks:
            d = {"kind": "callback", "name": b}
        elif b.startswith("struct "):
            d = {"kind": "opaque", "name": b}
        elif b in PRIMITIVES:
            k, size, signed = PRIMITIVES[b]
            d = {"kind": k, "name": b, "size": size}
            if k == "int":
                d["signed"] = signed
        else:
            raise DescribeError(f"unknown type {t.text!r}")
        # char * is text, not an array of chars.
        if b == "char" and t.pointers >= 1:
            d = {"kind": "string", "name": "char"}
        return d

    def callback_info(self, cb: Callback) -> dict:
        return {"returns": {"c_type": cb.returns.text, "type": self.type_info(cb.returns)},
                "params": [{"name": p.name, "c_type": p.type.text, "type": self.type_info(p.type),
                            "pointer": p.type.pointers - (1 if p.type.base == "char" else 0)}
                           for p in cb.params]}

    # ---- functions -----------------------------------------------------
    def _arrayable(self, p: Param) -> bool:
        """Can be the data pointer of a (pointer, size_t) pair."""
        if p.callback or p.type.pointers == 0:
            return False
        t = p.type
        if t.base == "char" and t.pointers == 1 and t.const_base:
            return False  # a string
        if t.pointers == 1 and (t.base in self.structs and t.const_base or t.base.startswith("struct ")):
            return False  # one struct passed by pointer
        return True

    def _output_candidate(self, p: Param) -> bool:
        if p.callback or p.type.pointers == 0 or p.type.const_pointee:
            return False
        if p.type.base == "void" and p.type.pointers == 1 and p.name not in ("dst", "buf"):
            return False  # memory handed in (from_blob's data, user_data)
        if p.type.base.startswith("struct ") and p.type.pointers == 1:
            return False  # struct DLManagedTensor *src: an input
        return True

    def describe(self, f: Function) -> dict:
        ov = OVERRIDES.get(f.name, {})
        tags = _doc_tags(f.doc)
        params = f.params
        n = len(params)
        is_free = f.name.endswith("_free") and f.returns.text == "void"
        # Arrays: the pointer directly before a size_t length, and the const
        # (input) pointers right before it, which share the length
        # (names + tensors + n).
        length_of: Dict[str, List[str]] = {}
        array_len: Dict[str, str] = {}
        for j, q in enumerate(params):
            if not (q.type and q.type.text == "size_t" and _LENGTH_NAME.match(q.name)) or j == 0:
                continue
            prev = params[j - 1]
            if not self._arrayable(prev):
                continue
            run = [prev]
            if prev.type.const_pointee and prev.type.base != "void":
                k = j - 2
                while k >= 0 and self._arrayable(params[k]) and params[k].type.const_pointee \
                        and params[k].type.base != "void":
                    run.insert(0, params[k])
                    k -= 1
            for x in run:
                array_len[x.name] = q.name
                length_of.setdefault(q.name, []).append(x.name)
        for pn, o in ov.items():
            if "array" in o and array_len.get(pn) != o["array"]:
                array_len[pn] = o["array"]
                length_of.setdefault(o["array"], []).append(pn)
        # Outputs: the leading run of non-const pointers (and the capacities
        # of output arrays inside it).
        outs = set()
        if not is_free:
            for p in params:
                if p.name in length_of and any(x in outs for x in length_of[p.name]):
                    continue
                if self._output_candidate(p):
                    outs.add(p.name)
                    continue
                break
        for o_name, o in ov.items():
            if o.get("direction") == "out":
                outs.add(o_name)

        result = []
        for p in params:
            o = ov.get(p.name, {})
            # c_type is a C type name, never with the parameter's name inside:
            # a function pointer spelled inline is `void (*)(void *)` and its
            # declaration, as the header writes it, is c_decl (format 4).
            d: dict = {"name": p.name, "c_type": p.decl(None)}
            if p.name == "...":
                result.append({"name": "...", "c_type": "...", "type": self.type_info(p.type), "direction": "in",
                               "pointer": 0, "nullable": False, "ownership": "borrowed"})
                continue
            if p.callback:
                d["c_decl"] = p.decl()
                d["type"] = {"kind": "callback", "signature": self.callback_info(p.callback)}
                d["direction"] = "in"
                d["pointer"] = 0
                d["nullable"] = o.get("nullable", _doc_says_nullable(f.doc, p.name) or p.name in tags.get("nullable", []))
                d["ownership"] = "borrowed"
                result.append(d)
                continue
            t = p.type
            d["type"] = self.type_info(t)
            ptr = t.pointers - (1 if d["type"]["kind"] == "string" else 0)
            d["pointer"] = ptr
            if p.name in length_of:
                d["direction"] = "in"
                d["length_of"] = length_of[p.name]
                d["role"] = "capacity" if any(x in outs for x in length_of[p.name]) else "length"
            elif p.name in outs:
                d["direction"] = "out"
            else:
                d["direction"] = "in"
            if p.name in array_len:
                d["array"] = {"length": array_len[p.name]}
                if d["type"]["name"] == "void":
                    d["array"]["unit"] = "bytes"
            nullable = o.get("nullable")
            if nullable is None:
                nullable = p.name in tags.get("nullable", []) or is_free or \
                    (d["direction"] == "in" and _doc_says_nullable(f.doc, p.name))
            if ptr == 0 and d["type"]["kind"] not in ("handle", "string", "callback"):
                nullable = False
            d["nullable"] = bool(nullable)
            if _is_bool(f, p, d):
                d["boolean"] = True
            d.update(self._int_enum(f, p, d))
            # A handle output that can come back NULL (no gradient, an
            # undefined element, no targets).
            if d["direction"] == "out" and d["type"]["kind"] == "handle":
                nr = o.get("null_result")
                d["null_result"] = bool(_doc_says_null_result(f, p) if nr is None else nr)
            if d["direction"] == "out" and o.get("elements_null_result"):
                d["elements_null_result"] = True
            if t.pointers:
                # const-ness as data: const_levels[0] is the base type's,
                # const_levels[k] the k-th '*' (innermost first);
                # const = the object pointed to is read-only.
                d["const"] = t.const_pointee
                d["const_levels"] = [t.const_base] + list(t.const_ptrs)
            d.update(self._ownership(f, p, d, o, tags, is_free))
            if "buffer_size" in o:
                d["buffer_size"] = o["buffer_size"]
            if o.get("elements_nullable"):
                d["elements_nullable"] = True
            if "element_length" in o:  # an array of arrays: element i has element_length[i] items
                d["array"]["element_length"] = o["element_length"]
            if "element_lengths_of" in o:  # the lengths of another array's elements, taken from them
                d["element_lengths_of"] = o["element_lengths_of"]
            elif d.get("ownership") == "caller_buffer" and "out_len" in {q.name for q in params}:
                # The convention of the copy-out functions: *out_len gets the
                # full length, a buffer too small gets what fits (text: cap - 1
                # bytes and a NUL).
                text = d["type"]["kind"] == "string"
                d["buffer_size"] = {"unit": "bytes", "rule": "reported", "length": "out_len", "plus": 1 if text else 0}
            result.append(d)
        # A length shared by arrays some of which may be NULL
        # (ctorch_summary_writer_add_hparams: names, values, texts; n): the
        # required ones give it, a non-NULL optional one must have as many.
        by = {d["name"]: d for d in result}
        for d in result:
            if d.get("role") == "length" and len(d["length_of"]) > 1 and \
                    any(by[x]["nullable"] for x in d["length_of"]):
                d["length_from"] = [x for x in d["length_of"] if not by[x]["nullable"]]
        ret = {"c_type": f.returns.text, "type": self.type_info(f.returns)}
        if f.returns.pointers:
            ret["const"] = f.returns.const_pointee
        if f.returns.text == "ctorch_status":
            ret["kind"] = "status"
        elif f.returns.text == "void":
            ret["kind"] = "none"
        else:
            ret["kind"] = "value"
            if ret["type"]["kind"] == "string":
                ret["ownership"] = "borrowed"
                ret["lifetime"] = _doc_lifetime(f)
        entry = {"name": f.name, "origin": "header", "section": f.section, "doc": f.doc,
                 "returns": ret, "params": result, "inline": f.inline, "line": f.line}
        ts = THREAD_STATE.get(f.name)
        if ts is not None:
            if ts["handle"] not in by or by[ts["handle"]]["type"]["kind"] != "handle":
                raise DescribeError(f"{f.name}: THREAD_STATE names {ts['handle']!r}, not a handle parameter")
            entry["thread_state"] = dict(ts)
        # "@c_only WHY": a function only C can call (variadic, va_list); the
        # bindings leave it out (generate_bindings.py) and api.json says why.
        m = re.search(r"@c_only\s+([^\n]+)", f.doc or "")
        if m:
            entry["c_only"] = m.group(1).strip()
        elif any(d["type"]["kind"] in ("variadic", "va_list") for d in result):
            raise DescribeError(f"{f.name}: a variadic or va_list function needs '@c_only REASON' in its doc")
        # "UNSAFE: WHY" opening the doc: bad input may crash the process (as
        # a generated operator flagged in unsafe_ops.txt); bindings give it
        # a name or marking that says so.
        m = re.match(r"\s*UNSAFE:\s*([^\n]+)", f.doc or "")
        if m:
            entry["unsafe"] = True
            entry["unsafe_reason"] = m.group(1).strip()
            # The binding emitters mark only generated operators unsafe
            # (ops_json.unsafe) so far: until they read this flag too, an
            # unchecked entry point stays C's, never a safe binding call.
            entry.setdefault("c_only", "UNSAFE: bad input may crash the process; the bindings leave it "
                                       "out until they mark header functions unsafe")
        if f.inline:
            entry["inline_body"] = self.inline_body(f)
        return entry

    def _int_enum(self, f: Function, p: Param, d: dict) -> dict:
        """A plain int parameter that holds an enum's values, as the doc says
        ("dtype < 0 = keep, else a floating-point ctorch_dtype", "kind: a
        ctorch_x value"): `enum` names the enum, `negative` what a negative
        value means instead (a binding's None)."""
        if d["type"]["kind"] != "int" or d["pointer"] != 0:
            return {}
        n = re.escape(p.name)
        m = re.search(rf"\b{n} < 0 = (\w+), else an? [\w -]*?\b(ctorch_\w+)\b", f.doc)
        if m and m.group(2) in self.enums:
            return {"enum": m.group(2), "negative": m.group(1)}
        m = re.search(rf"\b{n}:? an? (ctorch_\w+) value\b", f.doc)
        if m and m.group(1) in self.enums:
            return {"enum": m.group(1)}
        return {}

    def inline_body(self, f: Function) -> dict:
        """What a static inline helper does, as data: the struct it returns
        and each field's value (a constant, an enum value, or a parameter,
        `"as": "bool"` for `v ? 1 : 0`), so a binding implements it without
        the header. Refuses a body it cannot read."""
        body = re.sub(r"\s+", " ", f.body)
        m = re.search(r"\{ ?(\w+) (\w+) = \{([^}]*)\};(.*?)return \2; ?\}$", body)
        st = next((x for x in self.h.structs if m and x.name == m.group(1)), None)
        if not m or st is None:
            raise DescribeError(f"{f.name}: an inline body api_header.py cannot read: {body!r}")
        var = m.group(2)
        params = {p.name for p in f.params}
        enum_vals = {v.name: (e.name, v.value) for e in self.h.enums for v in e.values}

        def value(expr: str) -> dict:
            expr = expr.strip()
            if expr in params:
                return {"param": expr}
            mb = re.fullmatch(r"(\w+) \? 1 : 0", expr)
            if mb and mb.group(1) in params:
                return {"param": mb.group(1), "as": "bool"}
            if expr in enum_vals:
                return {"enum": enum_vals[expr][0], "name": expr, "value": enum_vals[expr][1]}
            if re.fullmatch(r"-?\d+", expr):
                return {"value": int(expr)}
            if re.fullmatch(r"-?\d+\.\d*", expr):
                return {"value": float(expr)}
            raise DescribeError(f"{f.name}: cannot read the value {expr!r}")
        inits = [x for x in m.group(3).split(",")]
        if len(inits) != len(st.fields):
            raise DescribeError(f"{f.name}: {len(inits)} initialisers for {len(st.fields)} fields")
        fields = {fd.name: value(x) for fd, x in zip(st.fields, inits)}
        for a in filter(None, (x.strip() for x in m.group(4).split(";"))):
            ma = re.fullmatch(re.escape(var) + r"\.(\w+) = (.+)", a)
            if not ma or ma.group(1) not in fields:
                raise DescribeError(f"{f.name}: cannot read the statement {a!r}")
            fields[ma.group(1)] = value(ma.group(2))
        return {"returns_struct": st.name, "fields": [{"field": k, **v} for k, v in fields.items()]}

    def _ownership(self, f: Function, p: Param, d: dict, o: dict, tags, is_free: bool) -> dict:
        k = d["type"]["kind"]
        if "ownership" in o:
            r = {"ownership": o["ownership"]}
            if "free" in o:
                r["free"] = o["free"]
            if "lifetime" in o:
                r["lifetime"] = o["lifetime"]
            if "when" in o:
                r["when"] = o["when"]
            return r
        if p.name in tags.get("consumes", []):
            return {"ownership": "consumed"}
        if p.name in tags.get("frees", []):
            return {"ownership": "freed"}
        if (f.name.endswith("_leave") and d["direction"] == "in" and k == "handle"
                and self.free_of.get(d["type"]["name"], SCOPE_LEAVE.get(d["type"]["name"])) == f.name):
            return {"ownership": "freed", "when": "always"}
        if d["direction"] == "out":
            if p.name in tags.get("borrowed", []):
                return {"ownership": "borrowed"}
            if k == "handle":
                h = d["type"]["name"]
                if h == "ctorch_autograd_ctx":
                    return {"ownership": "borrowed"}
                return {"ownership": "new", "free": self.free_of.get(h, SCOPE_LEAVE.get(h))}
            if k == "string":
                if p.type.const_base:
                    return {"ownership": "borrowed", "lifetime": _doc_lifetime(f)}
                if d["pointer"] == 0:  # char *buf
                    return {"ownership": "caller_buffer"}
                return {"ownership": "new", "free": "ctorch_string_free"}
            if d.get("array") or k == "void":
                return {"ownership": "caller_buffer"}
            if d["pointer"] >= 2:
                # const int64_t **out: the address of memory ctorch keeps.
                return {"ownership": "borrowed", "lifetime": _doc_lifetime(f)}
            return {"ownership": "value"}
        # Inputs.
        if is_free and k in ("handle", "string"):
            return {"ownership": "freed"}
        if k in ("handle", "string", "opaque") or d["pointer"] > 0 or k == "callback":
            return {"ownership": "borrowed"}
        return {"ownership": "value"}


def _elements(handle: str, funcs: List[dict]) -> Optional[dict]:
    """A handle that is a container of other handles: `<handle>_size(size_t
    *out, H)` gives the count and `<handle>_get(E *out, H, size_t i)` element
    i (a new E, E another handle type); `<handle>_key(const char **out, H,
    size_t i)`, when present, entry i's key (borrowed text). A binding can
    then turn one into its language's list or map by rule."""
    by = {f["name"]: f for f in funcs}

    def sig(name):
        f = by.get(name)
        return None if f is None else [(p["direction"], p["type"]["kind"], p["type"].get("name"), p.get("pointer", 0))
                                       for p in f["params"]]
    size, get, key = f"{handle}_size", f"{handle}_get", f"{handle}_key"
    if sig(size) != [("out", "int", "size_t", 1), ("in", "handle", handle, 0)]:
        return None
    g = sig(get)
    if not g or len(g) != 3 or g[0][:2] != ("out", "handle") or g[0][2] == handle or g[0][3] != 1 or \
            g[1] != ("in", "handle", handle, 0) or g[2] != ("in", "int", "size_t", 0):
        return None
    el = {"handle": g[0][2], "size": size, "get": get}
    if sig(key) == [("out", "string", "char", 1), ("in", "handle", handle, 0), ("in", "int", "size_t", 0)]:
        el["key"] = key
    return el


def describe_header(h: Header) -> dict:
    """enums, structs, handles, callbacks, constants and functions of ctorch.h."""
    ds = Describer(h)
    funcs = [ds.describe(f) for f in h.functions]
    check(funcs, ds)
    handles = []
    for x in h.handles:
        free = ds.free_of.get(x.name)
        if x.name in SCOPE_LEAVE:
            free = SCOPE_LEAVE[x.name]
        if x.name == "ctorch_autograd_ctx":
            free = None  # borrowed, only valid inside a callback
        handles.append({"name": x.name, "tag": x.tag, "free": free, "doc": x.doc, "section": x.section,
                        "null": _null_meaning(x.name)})
        el = _elements(x.name, funcs)
        if el:
            handles[-1]["elements"] = el
    enums = [{"name": e.name, "c_type": "int32_t", "doc": e.doc, "section": e.section,
              "values": [{"name": v.name, "value": v.value, "doc": v.doc} for v in e.values]}
             for e in h.enums]
    callbacks = [{"name": c.name, "doc": c.doc, "section": c.section, "signature": ds.callback_info(c.callback)}
                 for c in h.callbacks]
    macros = []
    for m in h.macros:
        if m.name in ("CTORCH_H", "CTORCH_API", "CTORCH_ENUM_BASE"):
            continue
        e = {"name": m.name, "doc": m.doc}
        if m.params is None:
            e["value"] = m.value
        else:
            e["params"] = m.params
            e["body"] = m.body
            e["bits"] = _macro_bits(m)
        macros.append(e)
    _link_flags(funcs, macros)
    return {"functions": funcs, "handles": handles, "enums": enums, "callbacks": callbacks,
            "macros": macros, "opaque_types": list(h.opaque),
            "structs_raw": h.structs}


# The name prefix of each function's flag constants (a binding strips it to
# name its options): the names alone cannot say where the group's prefix
# ends (CTORCH_CHECKPOINT_NO_RNG_STATE is alone in its group).
FLAG_PREFIX = {"ctorch_module_load_ex": "CTORCH_MODULE_LOAD_", "ctorch_nn_checkpoint": "CTORCH_CHECKPOINT_",
               "ctorch_ddp_new": "CTORCH_DDP_"}

_FLAG_OF = re.compile(r"^Flags? of (ctorch_\w+)\b")
_FLAGS_AS = re.compile(r"\bflags as (ctorch_\w+)\b")


def _link_flags(funcs: List[dict], macros: List[dict]) -> None:
    """Each `flags` parameter (an OR of bit constants) gets flag_constants:
    the macros whose doc begins "Flag of <function>:", or those of the
    function its doc names ("flags as ctorch_nn_checkpoint"), and their
    common prefix. A flags parameter with none found, or a "Flag of" macro no
    parameter takes, is an error: the header's wording must say."""
    of: Dict[str, List[str]] = {}
    for m in macros:
        mm = _FLAG_OF.match(m.get("doc") or "")
        if mm and "value" in m:
            of.setdefault(mm.group(1), []).append(m["name"])
    used = set()
    for f in funcs:
        for p in f["params"]:
            if p["name"] != "flags" or p["type"]["kind"] != "int" or p["pointer"]:
                continue
            src = f["name"] if f["name"] in of else next(iter(_FLAGS_AS.findall(f["doc"] or "")), None)
            names = of.get(src or "")
            if not names:
                raise DescribeError(f"{f['name']}: flags has no constants (a macro documented "
                                    f"'Flag of {f['name']}: ...', or 'flags as <function>' in its doc)")
            used.add(src)
            prefix = FLAG_PREFIX.get(src)
            if not prefix or not all(n.startswith(prefix) for n in names):
                raise DescribeError(f"{f['name']}: flags {names}: no FLAG_PREFIX entry for {src} they all start with")
            value = {m["name"]: m["value"] for m in macros if "value" in m}
            p["flag_constants"] = {"prefix": prefix, "names": sorted(names, key=lambda n: (value[n], n))}
    for fn in sorted(set(of) - used):
        raise DescribeError(f"macros {of[fn]} are documented as flags of {fn}, which has no flags parameter")


def _macro_bits(m) -> dict:
    """A function-like macro as data: the status macros extract a bit field,
    `((uint32_t)(st) >> shift) & mask`. Refuses any other shape."""
    b = m.body
    mm = re.search(r"\(uint32_t\)\((\w+)\)\)?( >> (\d+)\))? & (0x[0-9A-Fa-f]+)u", b)
    if not mm or mm.group(1) not in (m.params or []):
        raise DescribeError(f"macro {m.name}: a body api_header.py cannot describe as data: {b!r}")
    return {"arg": mm.group(1), "as": "uint32_t", "shift": int(mm.group(3) or 0), "mask": int(mm.group(4), 16),
            "result": "ctorch_status" if "(ctorch_status)" in b else "uint32_t"}


def _null_meaning(h: str) -> Optional[str]:
    return {"ctorch_tensor": "the undefined tensor (None), accepted where the schema says Tensor?",
            "ctorch_generator": "the default generator"}.get(h)


def check(funcs: List[dict], ds: Describer) -> None:
    """Every handle output has a free function; every parameter a direction."""
    problems = []
    for f in funcs:
        for p in f["params"]:
            if p.get("ownership") == "new" and not p.get("free"):
                problems.append(f"{f['name']}: output '{p['name']}' is new but its type has no free function")
            if p["direction"] == "out" and "array" in p and "buffer_size" not in p:
                problems.append(f"{f['name']}: output array '{p['name']}' has no buffer_size rule (OVERRIDES)")
            elif p.get("ownership") == "caller_buffer" and "buffer_size" not in p:
                problems.append(f"{f['name']}: caller buffer '{p['name']}' has no buffer_size rule (OVERRIDES)")
            if p["direction"] == "out" and p["pointer"] == 0 and p["type"]["kind"] not in ("string", "void"):
                problems.append(f"{f['name']}: output '{p['name']}' is not a pointer")
    if problems:
        raise ValueError("api.json: header declarations the rules cannot describe (add a doc tag or an "
                         "OVERRIDES entry in bindings-gen/ctorch_gen/api_header.py):\n  " + "\n  ".join(problems))
