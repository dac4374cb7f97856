"""Go binding emitter, the header layer (hfuncs_gen.go): every hand-written C
function of api.json (origin: header) as a typed Go function or method, a Go
struct per C struct and a Go type per handle. Split from ops.py, which
writes the operators, enums and cgo preamble and calls emit_hfuncs here."""
from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple

from ..apimodel import Api, CSlot, StructField
from ..hplan import Planned, SlotWriter, class_handles, class_name, func_doc, list_handles, plan
from .names import GO_KEYWORDS, RUNTIME_NAMES, camel, go_arg, go_enum_type, go_op_name

# ---- hfuncs_gen.go: the header's functions as typed Go functions ----------------------------

_GO_SCALAR = {"int": ("int", "C.int"), "int32_t": ("int32", "C.int32_t"), "int64_t": ("int64", "C.int64_t"),
              "uint64_t": ("uint64", "C.uint64_t"), "uint32_t": ("uint32", "C.uint32_t"),
              "size_t": ("int", "C.size_t"), "double": ("float64", "C.double"), "uint8_t": ("uint8", "C.uint8_t")}
# Go faces of structs kept by hand (a sum type with constructors); every other struct is mirrored.
_HAND_STRUCTS = {"ctorch_scalar": "Scalar"}
# The handles whose calls the library refuses with CTORCH_BUSY while another
# thread's call on them runs (include/ctorch.h, "Sharing one handle between
# threads": "Enforced"). A wrapper taking one makes its call again while
# SetBusyTimeout says to wait (bindings-gen/go/busy.go).
EXCLUSIVE_HANDLES = {"ctorch_optimizer", "ctorch_lr_scheduler", "ctorch_data_loader", "ctorch_grad_scaler",
                     "ctorch_process_group", "ctorch_work"}


def go_struct_name(name: str) -> str:
    return _HAND_STRUCTS.get(name) or camel(name[len("ctorch_"):])


def go_handle_type(name: str) -> str:
    return class_name(name)


def _field_go(f: StructField) -> str:
    if f.array_length:
        return "string"
    if f.enum is not None:
        return go_enum_type(f.enum)
    return _GO_SCALAR[f.c_type][0]


def _cgo_field(n: str) -> str:
    return "_" + n if n in GO_KEYWORDS else n


def emit_structs(doc: Api) -> List[str]:
    """A Go struct per api.json struct (but Scalar's), with its conversions to and from C."""
    out = []
    for s in doc.structs:
        if s.name in _HAND_STRUCTS:
            continue
        gn = go_struct_name(s.name)
        out.append(f"// {gn} is {s.name}: {s.doc}")
        out.append(f"type {gn} struct {{")
        for f in s.fields:
            out.append(f"\t{camel(f.name)} {_field_go(f)}")
        out.append("}")
        out.append("")
        out.append(f"func (x {gn}) c() C.{s.name} {{")
        out.append(f"\tvar r C.{s.name}")
        for f in s.fields:
            cf = _cgo_field(f.name)
            if f.array_length:
                out.append(f"\tfor i := 0; i < len(x.{camel(f.name)}) && i < {f.array_length}-1; i++ {{")
                out.append(f"\t\tr.{cf}[i] = C.char(x.{camel(f.name)}[i])")
                out.append("\t}")
            else:
                out.append(f"\tr.{cf} = C.{f.c_type}(x.{camel(f.name)})")
        out.append("\treturn r")
        out.append("}")
        out.append("")
        out.append(f"func {gn[0].lower() + gn[1:]}FromC(r C.{s.name}) {gn} {{")
        vals = []
        for f in s.fields:
            cf = _cgo_field(f.name)
            if f.array_length:
                vals.append(f"{camel(f.name)}: C.GoString(&r.{cf}[0])")
            else:
                vals.append(f"{camel(f.name)}: {_field_go(f)}(r.{cf})")
        out.append(f"\treturn {gn}{{{', '.join(vals)}}}")
        out.append("}")
        out.append("")
    return out


_LISTS: Dict[str, dict] = {}


def _go_reader(handle: str) -> str:
    """ctorch_tensor_list -> readTensorList."""
    n = camel(handle[len("ctorch_"):])
    return "read" + n


def emit_handles(doc: Api) -> List[str]:
    out = []
    _LISTS.clear()
    _LISTS.update(list_handles(doc))
    for lh, el in _LISTS.items():
        # A list handle becomes a Go slice at once (api.json handles[].elements).
        free = next(x.free for x in doc.handles if x.name == lh)
        et = "Tensor" if el.handle == "ctorch_tensor" else go_handle_type(el.handle)
        wrap = "wrap" if el.handle == "ctorch_tensor" else f"wrap{et}"
        out += [f"// {_go_reader(lh)} returns the elements of a new {lh} as a slice and frees it",
                "// (api.json handles[].elements); it stops at an element the library refuses to give.",
                f"func {_go_reader(lh)}(l C.{lh}) []*{et} {{", f"	defer C.{free}(l)", "	var n C.size_t",
                f"	if C.{el.size}(&n, l) != 0 {{", "		return nil", "	}", f"	out := make([]*{et}, 0, int(n))",
                "	for i := 0; i < int(n); i++ {", f"		var e C.{el.handle}",
                f"		if C.{el.get}(&e, l, C.size_t(i)) != 0 {{", "			break", "		}",
                f"		out = append(out, {wrap}(e))", "	}", "	return out", "}", ""]
    pinned = thread_state_handles(doc)
    for h in class_handles(doc):
        gn = go_handle_type(h.name)
        # The loader also keeps the error that ended its All loop (train.go: Err);
        # a handle of per-thread state its thread (thread.go).
        extra = "; err error" if h.name == "ctorch_data_loader" else ""
        extra += "; pin threadPin" if h.name in pinned else ""
        out += [f"// {gn} owns a {h.name}: {h.doc}", f"type {gn} struct{{ h C.{h.name}{extra} }}", "",
                f"func (x *{gn}) handle() C.{h.name} {{", "\tif x == nil {", "\t\treturn nil", "\t}", "\treturn x.h",
                "}", "", f"func wrap{gn}(h C.{h.name}) *{gn} {{", "\tif h == nil {", "\t\treturn nil", "\t}",
                f"\tx := &{gn}{{h: h}}"]
        if h.free:
            out.append(f"\truntime.SetFinalizer(x, (*{gn}).Free)")
        out += ["\treturn x", "}", ""]
        out += [f"func handleArray{gn}(v []*{gn}, optional bool) (*C.{h.name}, C.size_t) {{",
                "\tif v == nil && optional {", "\t\treturn nil, 0", "\t}",
                f"\ta := make([]C.{h.name}, len(v)+1) // one more: [] is a non-NULL pointer",
                "\tfor i, x := range v {", "\t\ta[i] = x.handle()", "\t}", "\treturn &a[0], C.size_t(len(v))", "}", ""]
        out += [f"// Free releases the handle now ({h.free or 'borrowed: nothing to free'}); safe on nil and twice.",
                f"func (x *{gn}) Free() {{", "\tif x == nil || x.h == nil {", "\t\treturn", "\t}"]
        if h.free:
            out.append(f"\tC.{h.free}(x.h)")
        if h.name in pinned:  # freeing ends the state (a trace is abandoned, a capture ended)
            out.append("\tx.pin.release()")
        out += ["\tx.h = nil", "\truntime.SetFinalizer(x, nil)", "}", ""]
    return out


def thread_state_handles(doc: Api) -> set:
    """The handle types api.json's thread_state names (per-thread state a handle holds)."""
    out = set()
    for f in doc.functions:
        if f.thread_state is not None:
            out.add(next(p.type.name for p in f.params if p.name == f.thread_state.handle))
    return out


def _go_ctype_of_param(p: CSlot) -> str:
    t = p.type
    if t.kind == "handle":
        return f"C.{t.name}"
    if t.kind == "enum":
        return f"C.{t.name}"
    return _GO_SCALAR[t.name][1]


def hfunc_name(e: Planned, taken: set) -> Tuple[Optional[str], str]:
    """(receiver Go type or None, Go name) of a header function's wrapper."""
    s = e.short
    if e.receiver:
        m = e.method
        n = camel(m) + ("_" if m.endswith("_") else "")
        recv = "Tensor" if e.owner == "ctorch_tensor" else go_handle_type(e.owner)
        return recv, n
    n = camel(s) + ("_" if s.endswith("_") else "")
    if n in taken:
        n += "Fn"
    return None, n


def go_comment(text: str, width: int = 100) -> List[str]:
    """text as `//` lines of at most about width characters (words never split)."""
    lines, cur = [], ""
    for w in text.split():
        if cur and len(cur) + 1 + len(w) > width:
            lines.append("// " + cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    return lines + ["// " + cur]


class _Wrapper(SlotWriter):
    """A header function's typed Go wrapper, slot by slot (hplan.SlotWriter): besides the
    C call's text, the Go signature (sig), result types (rets) and result expressions
    (rexprs); selfname is the receiver's parameter."""

    def __init__(self, f, funcs, selfname):
        super().__init__(f, funcs)
        self.selfname = selfname
        self.sig: List[str] = []
        self.rexprs: List[str] = []

    def buffer_length(self, s, b):
        self.cargs.append(f"C.size_t(n__{go_arg(b.p.name)})" if b.how == "query_buffer"
                          else f"C.size_t(len(b__{go_arg(b.p.name)})-1)")

    def array_length(self, s):
        self.cargs.append(f"n__{go_arg(s.p.length_of[0])}")

    def query_buffer(self, s):
        p, v, t, bs = s.p, go_arg(s.p.name), s.p.type, s.p.buffer_size
        f = self.f
        params = self.f.params
        used = [src for c in bs.product for src in c.args.values() if isinstance(src, str)]
        ps = {q.name: q for q in params}
        args = []
        for u in dict.fromkeys(used):
            args.append(f"{go_arg(u)}.handle()" if ps[u].type.kind == "handle" else go_arg(u))
        self.pre += [f"n__{v}, err := bufLen_{f.name}_{p.name}({', '.join(args)})", "if err != nil {",
                     "\treturn " + "{ZERO}" + "err", "}"]
        if bs.unit == "elements":
            gt, ct = _GO_SCALAR[t.name]
            self.pre.append(f"b__{v} := make([]{gt}, n__{v}+1)")
            self.cargs.append(f"(*{ct})(unsafe.Pointer(&b__{v}[0]))")
            self.rets.append(f"[]{gt}")
        else:
            self.pre.append(f"b__{v} := make([]byte, n__{v}+1)")
            self.cargs.append(f"unsafe.Pointer(&b__{v}[0])")
            self.rets.append("[]byte")
        self.rexprs.append(f"b__{v}[:n__{v}]")

    def filled_buffer(self, s):  # handles into an array of bs.capacity; the count is reported
        v, t, bs = go_arg(s.p.name), s.p.type, s.p.buffer_size
        cnt = go_arg(bs.count)
        self.pre += [f"var b__{v} [{bs.capacity}]C.{t.name}", f"var r__{cnt} C.size_t"]
        self.cargs.append(f"&b__{v}[0]")
        self.rets.append("[]*Tensor")
        self.rexprs.append(f"wrapAll(b__{v}[:r__{cnt}])")

    def reported_buffer(self, s):
        v, k, bs = go_arg(s.p.name), s.p.type.kind, s.p.buffer_size
        self.cargs.append(f"(*C.char)(unsafe.Pointer(&b__{v}[0]))" if k == "string"
                          else f"unsafe.Pointer(&b__{v}[0])")
        ln = go_arg(bs.length)
        self.rets.append("string" if k == "string" else "[]byte")
        self.rexprs.append(f"string(b__{v}[:r__{ln}])" if k == "string" else f"b__{v}[:r__{ln}]")

    def out(self, s):
        p, v, t, k = s.p, go_arg(s.p.name), s.p.type, s.p.type.kind
        if k == "handle":
            self.pre.append(f"var r__{v} C.{t.name}")
            if t.name == "ctorch_tensor":
                self.rets.append("*Tensor")
                self.rexprs.append(f"wrap(r__{v})")
            elif t.name in _LISTS:
                el = _LISTS[t.name]
                self.rets.append("[]*Tensor" if el.handle == "ctorch_tensor" else f"[]*{go_handle_type(el.handle)}")
                self.rexprs.append(f"{_go_reader(t.name)}(r__{v})")
            else:
                gn = go_handle_type(t.name)
                self.rets.append(f"*{gn}")
                self.rexprs.append(f"wrap{gn}(r__{v})")
        elif k == "string":
            self.pre.append(f"var r__{v} *C.char")
            self.rets.append("string")
            if p.ownership == "new":
                self.post += [f"s__{v} := C.GoString(r__{v})", f"C.ctorch_string_free(r__{v})"]
                self.rexprs.append(f"s__{v}")
            else:
                self.rexprs.append(f"C.GoString(r__{v})")
        elif k == "struct":
            self.pre.append(f"var r__{v} C.{t.name}")
            gn = go_struct_name(t.name)
            self.rets.append(gn)
            self.rexprs.append(f"{gn[0].lower() + gn[1:]}FromC(r__{v})")
        elif k == "int" and p.pointer == 2:
            gt, ct = _GO_SCALAR[t.name]
            self.pre.append(f"var r__{v} *{ct}")
            self.rets.append(f"*{gt}")
            self.rexprs.append(f"(*{gt})(unsafe.Pointer(r__{v}))")
        elif k == "void":
            self.pre.append(f"var r__{v} unsafe.Pointer")
            self.rets.append("uintptr")
            self.rexprs.append(f"uintptr(r__{v})")
        elif k == "enum":
            self.pre.append(f"var r__{v} C.{t.name}")
            self.rets.append(go_enum_type(t.name))
            self.rexprs.append(f"{go_enum_type(t.name)}(r__{v})")
        else:
            gt, ct = _GO_SCALAR[t.name]
            if s.how != "counter" or s.counts.buffer_rule != "filled":
                self.pre.append(f"var r__{v} {ct}")  # (a "filled" count is declared with its array)
            if s.how == "counter":
                self.cargs.append(f"&r__{v}")
                return
            if p.boolean:
                self.rets.append("bool")
                self.rexprs.append(f"r__{v} != 0")
            else:
                self.rets.append(gt)
                self.rexprs.append(f"{gt}(r__{v})")
        self.cargs.append(f"&r__{v}")

    def shared_length(self, s):
        p, v = s.p, go_arg(s.p.name)
        f = self.f
        # One length for several slices (some may be nil): that of the
        # given ones, which must agree, else an error before C is called.
        lo = f.shared_length_arrays(p)
        self.pre += [f"n__{v}, err := sharedLen({json.dumps(f.name)}, []string{{{', '.join(json.dumps(q) for q in lo)}}}, "
                     f"[]bool{{{', '.join(go_arg(q) + ' != nil' for q in lo)}}}, "
                     f"[]int{{{', '.join('int(n__' + go_arg(q) + ')' for q in lo)}}})",
                     "if err != nil {", "\treturn {ZERO}err", "}"]
        self.cargs.append(f"C.size_t(n__{v})")

    def element_lengths(self, s):  # taken from the arrays' lengths (int64Arrays)
        p = s.p
        self.cargs.append(f"l__{go_arg(p.element_lengths_of)}")

    def argument(self, s):  # "int_arrays", "array", "in"
        p, v, t, k = s.p, go_arg(s.p.name), s.p.type, s.p.type.kind
        opt = p.nullable
        if p.array and p.array.element_length:  # a list of int lists (shapes)
            self.sig.append(f"{v} [][]int64")
            self.pre += [f"p__{v}, l__{v}, n__{v}, free__{v} := int64Arrays({v})", f"defer free__{v}()"]
            self.cargs.append(f"p__{v}")
            return
        if p.array:
            if k == "handle" and t.name == "ctorch_tensor":
                self.sig.append(f"{v} []*Tensor")
                self.pre.append(f"p__{v}, n__{v} := tensorArray({v}, {str(bool(opt)).lower()})")
                self.post.append(f"runtime.KeepAlive({v})")
            elif k == "handle":
                gn = go_handle_type(t.name)
                self.sig.append(f"{v} []*{gn}")
                self.pre.append(f"p__{v}, n__{v} := handleArray{gn}({v}, {str(bool(opt)).lower()})")
                self.post.append(f"runtime.KeepAlive({v})")
            elif k == "int":
                self.sig.append(f"{v} []int64")
                self.pre.append(f"p__{v}, n__{v} := int64Array({v})")
                self.post.append(f"runtime.KeepAlive({v})")
            elif k == "float":
                self.sig.append(f"{v} []float64")
                self.pre.append(f"p__{v}, n__{v} := float64Array({v})")
                self.post.append(f"runtime.KeepAlive({v})")
            elif k == "string":
                self.sig.append(f"{v} []string")
                self.pre += [f"p__{v}, n__{v}, free__{v} := stringArray({v})", f"defer free__{v}()"]
            else:
                self.sig.append(f"{v} []byte")
                self.pre.append(f"p__{v}, n__{v} := bytesArg({v})")
                self.post.append(f"runtime.KeepAlive({v})")
            self.cargs.append(f"p__{v}")
            self.pre.append(f"_ = n__{v}")
        elif k == "handle":
            gt = "*Tensor" if t.name == "ctorch_tensor" else f"*{go_handle_type(t.name)}"
            if p.name != self.selfname:
                self.sig.append(f"{v} {gt}")
            self.cargs.append(f"{v}.handle()")
            self.post.append(f"runtime.KeepAlive({v})")
            if p.ownership == "freed":  # nil-safe: a nil handle is refused by C, not a Go panic
                self.post.insert(0, f"if {v} != nil {{ {v}.h = nil; runtime.SetFinalizer({v}, nil) }}")
        elif k == "string":
            if opt:
                self.sig.append(f"{v} *string")
                self.pre += [f"s__{v} := optCString({v})", f"defer freeCString(s__{v})"]
            else:
                self.sig.append(f"{v} string")
                self.pre += [f"s__{v} := C.CString({v})", f"defer freeCString(s__{v})"]
            self.cargs.append(f"s__{v}")
        elif k == "struct":
            gn = go_struct_name(t.name)
            if p.pointer:
                self.sig.append(f"{v} *{gn}")
                self.pre += [f"var p__{v} *C.{t.name}", f"if {v} != nil {{", f"\tc__{v} := {v}.c()", f"\tp__{v} = &c__{v}",
                             "}"]
                self.cargs.append(f"p__{v}")
            else:
                self.sig.append(f"{v} {gn}")
                self.cargs.append(f"{v}.c()")
        elif k == "float" and p.pointer:
            self.sig.append(f"{v} *float64")
            self.pre.append(f"p__{v} := optFloat64({v})")
            self.cargs.append(f"p__{v}")
        elif p.boolean:
            self.sig.append(f"{v} bool")
            self.cargs.append(f"cbool({v})")
        elif k == "enum":
            self.sig.append(f"{v} {go_enum_type(t.name)}")
            self.cargs.append(f"C.{t.name}({v})")
        else:
            gt, ct = _GO_SCALAR[t.name]
            self.sig.append(f"{v} {gt}")
            self.cargs.append(f"{ct}({v})")


def header_function(e: Planned, funcs: dict, taken: set) -> str:
    f = e.f
    params = f.params
    recv, name = hfunc_name(e, taken)
    selfname = e.self if recv else None
    w = _Wrapper(f, funcs, selfname).walk()
    cp, sig, pre, cargs, post, rets, rexprs = w.plan, w.sig, w.pre, w.cargs, w.post, w.rets, w.rexprs
    call = f"C.{f.name}({', '.join(cargs)})"
    waits = any(p.type.name in EXCLUSIVE_HANDLES and p.direction != "out" for p in params)
    # A scheduler's call may run a Go lr lambda (callbacks.go), which leaves
    # its error for the call's statusError on the OS thread it ran on: the
    # goroutine stays there until the call has returned its error.
    stays = any(p.type.name == "ctorch_lr_scheduler" and p.direction != "out" for p in params)
    head = f"func ({go_arg(selfname)} *{recv}) {name}" if recv else f"func {name}"
    # The header's whole text (go doc shows it; `X_async` has its twin's: hplan.func_doc).
    doc = "\n".join(go_comment(f"{name} calls {f.name}: {' '.join(func_doc(funcs, f).split())}"))
    if f.returns.kind == "value":
        rt = f.returns.type
        if rt.kind == "string":
            body = [f"\treturn C.GoString({call})"]
            sigr = "string"
        else:
            gt, _ = _GO_SCALAR[rt.name]
            body = [f"\treturn {gt}({call})"]
            sigr = gt
        return "\n".join([doc, f"{head}({', '.join(sig)}) {sigr} {{"] + body + ["}"]) + "\n"
    zeros = {"*Tensor": "nil", "[]*Tensor": "nil", "string": '""', "bool": "false", "uintptr": "0", "[]int64": "nil",
             "[]byte": "nil"}

    def zero(r):
        if r in zeros:
            return zeros[r]
        if r.startswith("*"):
            return "nil"
        if r in ("int", "int32", "int64", "uint64", "uint32", "float64", "uint8") or r in ENUM_TYPES:
            return "0"
        return r + "{}"
    zs = "".join(zero(r) + ", " for r in rets)
    pre = [s.replace("{ZERO}", zs) for s in pre]
    sigr = f"({', '.join(rets + ['error'])})" if rets else "error"
    lines = [doc, f"{head}({', '.join(sig)}) {sigr} {{"]
    if stays:
        lines += ["\truntime.LockOSThread()", "\tdefer runtime.UnlockOSThread()"]
    lines += ["\t" + s for s in pre]
    if cp.reported:
        p = cp.reported.p
        bs = p.buffer_size
        v = go_arg(p.name)
        ln = go_arg(bs.length)
        # The function reports the size: first with no room, then with what it said (+ plus).
        lines += [f"\tb__{v} := make([]byte, 1)", "\tfor {", f"\t\tst := {call}"]
        if waits:
            lines.append(f"\t\tfor w__ := (busyWait{{}}); w__.again(st); {{ st = {call} }}")
        lines += ["\t\tif st != 0 {", f"\t\t\treturn {zs}statusError(st)", "\t\t}",
                  f"\t\tif need := int(r__{ln}) + {bs.plus}; need > len(b__{v})-1 {{",
                  f"\t\t\tb__{v} = make([]byte, need+1)", "\t\t\tcontinue", "\t\t}", "\t\tbreak", "\t}"]
        lines += ["\t" + s for s in post]
    else:
        ts = f.thread_state
        if ts is not None and ts.role == "begin":
            # Locked before the call, so that it runs on the thread the handle then holds.
            lines.append("\tthread__ := lockThread()")
        lines.append(f"\tst := {call}")
        if waits:
            lines.append(f"\tfor w__ := (busyWait{{}}); w__.again(st); {{ st = {call} }}")
        if ts is not None and ts.role == "end":
            hv = go_arg(ts.handle)
            # (nil-safe: a nil handle is refused by C, not a Go panic)
            if ts.ends == "always":
                lines.append(f"\tif {hv} != nil {{ {hv}.pin.release() }}")
            else:  # unless_refused: a refused call left the state on
                lines += [f"\tif c := Status(statusCode(st)); {hv} != nil && c != StatusInvalidArgument && "
                          "c != StatusType {", f"\t\t{hv}.pin.release()", "\t}"]
        if cp.freed_always:
            lines += ["\t" + s for s in post]
            post = []
        lines.append("\tif st != 0 {")
        if ts is not None and ts.role == "begin":
            lines.append("\t\tunlockThread()")
        lines += ["\t\t" + s for s in post if s.startswith("runtime.") or ".h = nil" in s]
        lines.append(f"\t\treturn {zs}statusError(st)")
        lines.append("\t}")
        lines += ["\t" + s for s in post]
        if ts is not None and ts.role == "begin":
            hp = next(q for q in params if q.name == ts.handle)
            hv = go_arg(hp.name)
            if hp.direction == "out":  # the new handle holds the thread
                w = f"wrap{go_handle_type(hp.type.name)}(r__{hv})"
                rexprs = ["w__" if x == w else x for x in rexprs]
                lines += [f"\tw__ := {w}", "\tw__.pin.hold(thread__)"]
            else:
                lines.append(f"\t{hv}.pin.hold(thread__)")
    lines.append(f"\treturn {', '.join(rexprs + ['nil'])}")
    lines.append("}")
    return "\n".join(lines) + "\n"


ENUM_TYPES: set = set()


def emit_hfuncs(doc: Api) -> str:
    ENUM_TYPES.clear()
    ENUM_TYPES.update(go_enum_type(e.name) for e in doc.enums)
    funcs = {f.name: f for f in doc.functions}
    taken = set(RUNTIME_NAMES) | {"ABIHash", "Version"} | {go_op_name(f) for f in doc.functions
                                                             if f.origin == "generated"}
    out = ["// GENERATED by bindings-gen (emit_go.py) from api.json; do not edit.",
           "// Every hand-written C function of api.json (origin: header) as a typed Go function or",
           "// method: outputs returned before the error, new handles owned by Go values (Free, or a",
           "// finalizer), caller buffers sized by buffer_size, slice lengths passed for the arrays,",
           "// the inline helpers called through cgo, a Go struct per C struct.", "", "package ctorch", "",
           "// #include <stdlib.h>", '// #include "ctorch.h"', 'import "C"', "", "import (", '\t"runtime"',
           '\t"unsafe"', ")", "", "var _ = runtime.KeepAlive", "var _ unsafe.Pointer", ""]
    out += emit_structs(doc)
    out += emit_handles(doc)
    skipped = {}
    for e in plan(doc):
        f = e.f
        if f.inline:
            n = camel(e.short)
            ps = ", ".join(f"{go_arg(p.name)} {_GO_SCALAR[p.c_type][0]}" for p in f.params)
            cs = ", ".join(f"{_GO_SCALAR[p.c_type][1]}({go_arg(p.name)})" for p in f.params)
            rt = go_struct_name(f.returns.type.name)
            conv = "scalarFromC" if rt == "Scalar" else rt[0].lower() + rt[1:] + "FromC"
            out += [f"// {n} is {f.name} (a static inline helper of the header): {f.doc}",
                    f"func {n}({ps}) {rt} {{ return {conv}(C.{f.name}({cs})) }}", ""]
            continue
        if e.skip:
            skipped[e.name] = e.skip
            continue
        out.append(header_function(e, funcs, taken))
    skipped.update(doc.c_only_functions)  # left out before any emitter (generate_bindings.py)
    out.append("// notWrapped: the header functions with no Go wrapper here, and why.")
    out.append("var notWrapped = map[string]string{")
    for k, v in skipped.items():
        out.append(f"\t{json.dumps(k)}: {json.dumps(v)},")
    out.append("}")
    out.append("")
    return "\n".join(out)
