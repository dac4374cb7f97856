// Harness: bytes into the optimizer state loaders, ctorch_optimizer_load
// (the libtorch archive ctorch_optimizer_save writes: a TorchScript archive,
// checked as ctorch_module_load checks one) and
// ctorch_optimizer_load_state_dict (Python's torch.save(opt.state_dict()),
// read by ctorch's own unpickler). The first byte chooses:
//   bit 0      the loader (0: ctorch_optimizer_load, 1: _load_state_dict);
//   bit 1      how the rest is used (0: the raw file; 1: records, wrapped
//              in a well-formed zip by fz::records_archive, so the fuzzer
//              changes the pickles and code past the CRCs);
//   bits 2-4   the optimizer kind (SGD, Adam, AdamW, RMSprop, Adagrad; the
//              state-dict loader refuses the last two: NOT_IMPLEMENTED);
//   bit 5      one parameter group [w, b] or two ([w], [b]).
// The optimizer is made afresh for each input over new parameters w [2, 3]
// and b [3] (float32, with gradients). Properties: a refused load leaves
// the optimizer as it was (its options unchanged); a loaded state is usable
// (a step runs: state tensors of the wrong shape must have been refused,
// not handed to libtorch's update rules).
#include "fuzz_util.h"
#include "mem_file.h"
#include "zip_writer.h"

#include <vector>

namespace {

ctorch_tensor param(const float *v, const int64_t *shape, int ndim, size_t n) {
  ctorch_tensor t = nullptr, g = nullptr;
  FZ(ctorch_tensor_from_data(&t, v, n * sizeof(float), shape, ndim, CTORCH_FLOAT32));
  FZ(ctorch_tensor_set_requires_grad(t, 1));
  std::vector<float> gv(n, 0.25f);
  FZ(ctorch_tensor_from_data(&g, gv.data(), n * sizeof(float), shape, ndim, CTORCH_FLOAT32));
  FZ(ctorch_tensor_set_grad(t, g));
  ctorch_tensor_free(g);
  return t;
}

// Field by field (the struct has padding), bit for bit (a NaN is itself).
bool same_options(const ctorch_optim_options &a, const ctorch_optim_options &b) {
  auto same = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  return same(a.lr, b.lr) && same(a.weight_decay, b.weight_decay) && same(a.momentum, b.momentum) &&
         same(a.dampening, b.dampening) && a.nesterov == b.nesterov && a.amsgrad == b.amsgrad &&
         a.centered == b.centered && same(a.beta1, b.beta1) && same(a.beta2, b.beta2) && same(a.eps, b.eps) &&
         same(a.alpha, b.alpha) && same(a.lr_decay, b.lr_decay) &&
         same(a.initial_accumulator_value, b.initial_accumulator_value);
}

void run(const char *path, bool state_dict, ctorch_optimizer_kind kind, bool two_groups) {
  static const float wv[6] = {1, -2, 3, -4, 5, -6}, bv[3] = {0.5f, -0.5f, 1};
  static const int64_t ws[2] = {2, 3}, bs[1] = {3};
  ctorch_tensor params[2] = {param(wv, ws, 2, 6), param(bv, bs, 1, 3)};
  ctorch_optimizer opt = nullptr;
  ctorch_optim_options o;
  FZ(ctorch_optim_options_default(&o, kind));
  if (kind == CTORCH_OPTIM_SGD) o.momentum = 0.9;  // state to load (momentum buffers)
  ctorch_status st = FZ(ctorch_optimizer_new(&opt, kind, params, two_groups ? 1 : 2, &o));
  if (st == CTORCH_OK && two_groups) st = FZ(ctorch_optimizer_add_param_group(opt, params + 1, 1, nullptr));
  if (st != CTORCH_OK) fz::violation("could not make the optimizer", "ctorch_optimizer_new", st);
  size_t groups = two_groups ? 2 : 1;
  ctorch_optim_options before[2], after;
  for (size_t g = 0; g < groups; ++g) FZ(ctorch_optimizer_get_options(&before[g], opt, g));

  st = state_dict ? FZ(ctorch_optimizer_load_state_dict(opt, path)) : FZ(ctorch_optimizer_load(opt, path));
  size_t n = 0;
  FZ(ctorch_optimizer_num_param_groups(&n, opt));
  if (n != groups) fz::violation("a load changed the number of groups", "ctorch_optimizer_load", st);
  if (st != CTORCH_OK) {
    for (size_t g = 0; g < groups; ++g)
      if (FZ(ctorch_optimizer_get_options(&after, opt, g)) != CTORCH_OK || !same_options(before[g], after))
        fz::violation("a refused load changed the optimizer", "ctorch_optimizer_load", st);
  } else {
    for (size_t g = 0; g < groups; ++g) FZ(ctorch_optimizer_get_options(&after, opt, g));
    // Loaded options may be anything the file says (a NaN lr included);
    // the step must still only compute, never touch memory it should not.
    FZ(ctorch_optimizer_step(opt));
    FZ(ctorch_optimizer_zero_grad(opt, 0));
  }
  ctorch_optimizer_free(opt);
  for (ctorch_tensor t : params) ctorch_tensor_free(t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  uint8_t mode = data[0];
  bool state_dict = mode & 1;
  auto kind = (ctorch_optimizer_kind)(((mode >> 2) & 7) % 5);
  bool two_groups = mode & 0x20;
  if ((mode & 2) == 0) {
    fz::MemFile f(data + 1, size - 1);
    run(f.path(), state_dict, kind, two_groups);
    return 0;
  }
  std::vector<uint8_t> file = fz::records_archive(data + 1, size - 1);
  fz::MemFile f(file.data(), file.size());
  run(f.path(), state_dict, kind, two_groups);
  return 0;
}
