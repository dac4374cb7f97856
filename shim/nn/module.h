// The module layer's internal interface: the Module base class
// every built-in, container and custom module derives from, the parsed
// arguments of constructors and forwards, and the registry of built-in
// kinds. The C API (api.cpp) and every layer file (layers_*.cpp) include
// this and nothing else of each other.
//
// Rules for a layer:
// - Register parameters, buffers and children in the constructor in
//   torch.nn's order (that order is the state dict's and named_parameters'),
//   None entries included (bias=False registers "bias" as undefined, as
//   Python's register_parameter('bias', None) does).
// - Initialise in torch.nn's reset_parameters order with at:: ops on the
//   default generator under at::NoGradGuard, so the random draws are
//   Python's bit for bit.
// - forward reads its tensors by index (params[i].t): registration order is
//   fixed, and a name lookup per call would cost on the hot path.
// - Declare the kind with CTORCH_NN_KIND: its constructor and forward
//   signatures, written as Python would, are the catalogue (api.json's
//   "nn_modules", ctorch_nn_catalogue, the bindings' classes) and drive the
//   argument parser: one description for every consumer.
#pragma once

#include "core/internal.h"

#include <c10/core/Device.h>
#include <c10/core/GradMode.h>  // at::NoGradGuard, which every layer's init uses (2.x no longer brings it in through ATen.h)
#include <c10/core/ScalarType.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ctorch {
namespace nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;

// A Python literal as the argument parser reads it.
struct Value {
  enum Kind { None, Bool, Int, Float, Str, Seq, Dtype, Device, Mod } kind = None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;              // Str
  std::vector<Value> items;   // Seq (a tuple or a list)
  bool is_list = false;       // Seq written with [] (repr keeps the brackets)
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device{c10::kCPU};
  // Mod: a module argument (TransformerEncoder's encoder_layer), built from
  // "torch.nn.Kind(args)" text when the arguments were parsed (Python's
  // evaluation order, so its random draws come where Python's do) or passed
  // as a handle (ctorch_nn_new_with_modules).
  ModulePtr mod;
  // Python's repr of the value (1, 1.0, 'zeros', (3, 3), True, None,
  // torch.float64): what extra_repr prints.
  std::string repr() const;
};

// Arguments after parsing against a signature: every parameter of the
// signature present, in its order, defaults filled in. Accessors throw
// INVALID_ARGUMENT naming the argument when the value does not convert.
class Args {
 public:
  const Value &get(const char *name) const;  // INVALID_ARGUMENT if not in the signature
  bool is_none(const char *name) const;
  bool given(const char *name) const;        // written by the caller (not a default)
  int64_t i(const char *name) const;
  double f(const char *name) const;          // accepts an int
  bool b(const char *name) const;
  std::string s(const char *name) const;
  // An int or a sequence of ints, expanded to n values (_size_n_t); n = 0:
  // a sequence of any length (an int becomes one value).
  std::vector<int64_t> ints(const char *name, size_t n = 0) const;
  std::vector<double> floats(const char *name, size_t n = 0) const;
  c10::optional<c10::ScalarType> dtype(const char *name = "dtype") const;
  c10::optional<c10::Device> device(const char *name = "device") const;
  // The tensor options of factory kwargs (device, dtype), as Python's
  // factory_kwargs: unset fields keep libtorch's defaults.
  at::TensorOptions factory(const char *device = "device", const char *dtype = "dtype") const;

  std::vector<std::pair<std::string, Value>> values;  // signature order
  std::vector<bool> was_given;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  struct Entry {
    std::string name;
    at::Tensor t;  // undefined = None
    bool persistent = true;  // buffers only
  };

  explicit Module(std::string kind) : kind_(std::move(kind)) {}
  virtual ~Module() = default;
  const std::string &kind() const { return kind_; }

  // Positional inputs (undefined = None, already checked against the kind's
  // forward signature: count, required ones present) and the parsed keyword
  // arguments; returns the outputs in the signature's order (undefined = None).
  virtual std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kwargs) = 0;
  // Python's extra_repr(): "" for none.
  virtual std::string extra_repr() const { return ""; }
  // A copy of this object (options and registry; the caller then replaces
  // its tensors and children with deep copies). CTORCH_NN_COPYABLE(Class).
  virtual ModulePtr shallow_copy() const = 0;
  // Called after load_state_dict, to() and clone changed the tensors (e.g.
  // to rebuild a flattened weight list). Default: nothing.
  virtual void tensors_changed() {}
  // Called by train()/eval() on each module.
  virtual void set_training(bool on) { training = on; }
  // What the inference optimiser (optimize.cpp) must know of a layer it
  // rewrites beyond its tensors: false for kinds it does not rewrite.
  struct Spec {
    // Conv1d/2d/3d (nd > 0, not transposed)
    size_t nd = 0;
    std::vector<int64_t> stride, padding, dilation;  // padding empty when padding_str is set
    int64_t groups = 1;
    std::string padding_str, padding_mode;  // "" / "same" / "valid"; "zeros", ...
    // BatchNorm1d/2d/3d (batch_norm_nd > 0)
    size_t batch_norm_nd = 0;
    double eps = 0;
  };
  virtual bool spec(Spec &) const { return false; }

  // Registration (names: identifiers without '.'), as Python's: a name used
  // already by an attribute of the same kind is replaced in its place, one
  // of another kind is refused (INVALID_ARGUMENT). Return the index.
  size_t register_parameter(const std::string &name, at::Tensor t);  // sets requires_grad on a defined t
  size_t register_buffer(const std::string &name, at::Tensor t, bool persistent = true);
  size_t register_module(const std::string &name, ModulePtr child);

  // Forward of child i with one input, first output.
  at::Tensor call(size_t child, const at::Tensor &x);

  // Renames the class, for a built-in that Python makes as a subclass
  // differing only in its name: MultiheadAttention's out_proj is a Linear
  // that Python's repr shows as NonDynamicallyQuantizableLinear.
  void set_kind(std::string kind) { kind_ = std::move(kind); }

  std::vector<Entry> params;
  std::vector<Entry> buffers;
  std::vector<std::pair<std::string, ModulePtr>> children;
  // Every name registered above (only register_* add to the three lists):
  // the duplicate check in O(1), so a stack of many layers registers in
  // linear time (a scan per name made LSTM(1, 1, num_layers=30000) take 24 s).
  std::unordered_set<std::string> names;
  bool training = true;

 protected:
  Module(const Module &) = default;

 private:
  std::string kind_;
};

#define CTORCH_NN_COPYABLE(Class) \
  ::ctorch::nn::ModulePtr shallow_copy() const override { return std::make_shared<Class>(*this); }

// ---- built-in kinds --------------------------------------------------------

// A kind: torch.nn's class name, its constructor's signature and its
// forward's, written as in Python:
//   init:    "in_features: int, out_features: int, bias: bool = True,
//             device: Device? = None, dtype: ScalarType? = None"
//   forward: "input: Tensor -> Tensor"
//            "query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor? = None,
//             attn_mask: Tensor? = None; need_weights: bool = True,
//             average_attn_weights: bool = True, is_causal: bool = False
//             -> attn_output: Tensor, attn_output_weights: Tensor?"
// Types: int, float, bool, str, int[N] (an int or N ints), int[] (any
// number), float[N], float[], Device, ScalarType, Tensor, and unions
// written A|B (int[2]|str for Conv2d's padding); a trailing ? allows None.
// In forward, tensors before ';' are positional (Tensor? may be NULL),
// what follows ';' is keyword-only; outputs follow '->'.
struct Kind {
  const char *name;
  const char *init;
  const char *forward;
  std::function<ModulePtr(const Args &)> make;
};
// Registers a kind at static-initialisation time (CTORCH_NN_KIND).
bool register_kind(Kind k);
// k.make(a) after the size bound (bounds.cpp): OUT_OF_MEMORY naming the
// argument, before anything is allocated, when the parameters and buffers
// the kind would make pass ctorch_nn_set_max_parameters's bound. Every
// construction of a kind from arguments goes through it.
ModulePtr build(const Kind &k, const Args &a);
const Kind *find_kind(const std::string &name);
const std::vector<Kind> &kinds();

#define CTORCH_NN_KIND_CAT2(a, b) a##b
#define CTORCH_NN_KIND_CAT(a, b) CTORCH_NN_KIND_CAT2(a, b)
// CTORCH_NN_KIND("Linear", "in_features: int, ...", "input: Tensor -> Tensor",
//                [](const Args &a) { return std::make_shared<Linear>(a); });
// The generator reads these three strings out of the sources (bindings-gen).
#define CTORCH_NN_KIND(name, init, forward, make) \
  static const bool CTORCH_NN_KIND_CAT(ctorch_nn_kind_, __COUNTER__) = ::ctorch::nn::register_kind({name, init, forward, make})

// Parses `text` (Python call arguments: positional then keyword) against a
// signature; `what` names the caller in messages ("Conv2d").
// `preset`: arguments given apart from the text (module handles), by name;
// they count as keyword arguments.
Args parse_args(const char *signature, const char *text, const std::string &what,
                const std::vector<std::pair<std::string, Value>> &preset = {});

// The same numbers as torch.nn.init (under NoGradGuard, default generator).
void kaiming_uniform_(at::Tensor &t, double a);  // fan_in, leaky_relu: what reset_parameters uses
void uniform_(at::Tensor &t, double lo, double hi);
void xavier_uniform_(at::Tensor &t, double gain = 1.0);
int64_t fan_in(const at::Tensor &t);

}  // namespace nn
}  // namespace ctorch

// The C handle: one reference to a module.
struct ctorch_nn_module_s {
  ctorch::nn::ModulePtr m;
  ctorch::Live<ctorch_nn_module_s> live{this};  // last: see core/internal.h
};
