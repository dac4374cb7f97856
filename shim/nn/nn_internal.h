// What the folder's own files share beyond module.h: the signature model
// behind parse_args (api.cpp checks forward input counts and kwargs and
// writes the catalogue from it), the whole-module operations of module.cpp
// that the C API exposes, and the hooks of custom modules and shape checks.
// Layers need only module.h.
#pragma once

#include "nn/module.h"

namespace ctorch {
namespace nn {

// One parameter of a signature: "name: type = default".
struct Param {
  std::string name;
  std::string type;               // as written, without the trailing '?'
  std::vector<std::string> alts;  // the union's members
  bool optional = false;          // trailing '?': None allowed
  bool has_default = false;
  Value def;                      // None when there is no default
  std::string def_text;           // the default as written (the catalogue's)
  bool kw_only = false;           // after ';' in a forward signature
};

// A parsed signature: parameters (positional ones first) and, for a
// forward, its outputs.
struct Sig {
  std::vector<Param> params;
  std::vector<Param> outputs;
};

Sig parse_sig(const char *text);
// parse_sig cached by the literal's address (signatures are static text).
const Sig &sig_of(const char *text);
// Parses text against sig. kw_only_part: only the keyword-only parameters
// (a forward's kwargs text); otherwise every non-Tensor parameter.
// preset: as parse_args's.
Args parse_args_sig(const Sig &sig, const char *text, const std::string &what, bool kw_only_part,
                    const std::vector<std::pair<std::string, Value>> &preset = {});
// A NEW malloc'ed copy of s (the C API's char ** results; api.cpp).
char *give_string(const std::string &s);
// "[2, 3]" (module.cpp).
std::string shape_text(at::IntArrayRef s);
// Python's name of a dtype ("float32"), as in torch.float32.
std::string dtype_name(c10::ScalarType t);

// ---- whole-module operations (module.cpp) ----------------------------------

using Named = std::vector<std::pair<std::string, at::Tensor>>;
// named_modules(): this module first, then its descendants depth-first, each
// module once (Python's memo), with dotted paths ("" for m).
std::vector<std::pair<std::string, Module *>> named_modules(Module &m);
// named_parameters()/named_buffers(): None skipped, each tensor once.
Named named_tensors(Module &m, bool params, bool recurse);
// state_dict(): own parameters, own persistent buffers, then each child's
// entries under "child.", undefined skipped, no dedup (as Python), detached.
Named state_dict(Module &m);
// load_state_dict: checks everything first (throws VALUE listing missing,
// unexpected and mis-shaped keys; missing/unexpected only when strict),
// then copies under NoGradGuard. Returns "missing: K\n"/"unexpected: K\n" lines.
std::string load_state_dict(Module &m, const Named &sd, bool strict);
void set_train(Module &m, bool on);
void module_to(Module &m, c10::optional<c10::Device> device, c10::optional<c10::ScalarType> dtype);
void set_requires_grad(Module &m, bool on);
void zero_grad(Module &m, bool set_to_none);
int64_t num_parameters(Module &m, bool only_trainable);
std::string repr(const Module &m);
// to_meta: every tensor becomes an empty meta tensor of its shape, strides
// and dtype (shape checks; no copy of the data is made).
ModulePtr clone(const Module &m, bool to_meta = false);
// Whether target is m or inside it (a module may not contain itself).
bool contains(const Module &m, const Module *target);
// The submodule at a dotted path ("" = m); nullptr if none.
ModulePtr find_module(const ModulePtr &m, const std::string &path);
// The parameter or buffer entry at a dotted path; nullptr if none.
Module::Entry *find_entry(Module &m, const std::string &path, bool *is_param = nullptr);
// Python's identifier rule for registered names (no '.', not empty), and
// no attribute of another kind under the name (one of this kind is replaced).
enum class NameKind { parameter, buffer, child };
void check_name(const Module &m, const std::string &name, NameKind kind);

// The keyword arguments' defaults of a module's forward (the kind's forward
// signature; none for custom modules): what call() passes.
const Args &default_kwargs(const Module &m);
// A module whose forward wants the kwargs text itself (custom modules).
struct TextForward {
  virtual ~TextForward() = default;
  virtual std::vector<at::Tensor> forward_text(const std::vector<at::Tensor> &in, const std::string &kwargs) = 0;
};
// Checks positional inputs against m's forward signature (count, required
// ones present; INVALID_ARGUMENT naming n_inputs/inputs) and appends None
// for inputs left off the end. Custom modules: nothing checked.
void check_forward_inputs(Module &m, std::vector<at::Tensor> &in);
// Runs m's forward the way the C API does: the kwargs text parsed against
// m's forward signature (or passed as text to a TextForward).
std::vector<at::Tensor> run_forward(Module &m, const std::vector<at::Tensor> &in, const char *kwargs);

// Shape checking (module.cpp's call() records into it when set on this
// thread): each child's output shape, by dotted path.
struct ShapeLog {
  std::vector<std::pair<std::string, std::vector<int64_t>>> lines;
};
void set_shape_log(ShapeLog *log);
// The op ("aten::relu") when e says libtorch has no meta kernel for it
// (1.13 lacks several); "" for any other error.
std::string missing_meta_kernel(const c10::Error &e);
// Whether an exception was already given its module path (innermost call);
// reset by the C API before each forward.
void reset_error_path();

}  // namespace nn
}  // namespace ctorch
