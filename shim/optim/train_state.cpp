// Training checkpoints (ctorch_train_state_*): everything a run needs to
// continue exactly, in one torch.save dict laid out as PyTorch users lay
// theirs out ({"model", "optimizer", "scheduler", "epoch", ...}), so
// Python opens it with torch.load(weights_only=True).
//
// Exactness: the model's and optimizer's tensors, the scheduler's state,
// the loader's epoch and batch (its order is a function of seed and epoch)
// and the default generators' states (dropout, random transforms) are all
// a step depends on; tests/train/resume_kill.c kills a run with SIGKILL at
// random points and resumes it to bit-identical parameters.
//
// Saves go through the torch.save writer (temporary file, fsync, rename,
// fsync of the directory). Loads read and check every part before changing
// any: the model's keys and shapes, the optimizer's state (a fresh
// optimizer is built from the file and swapped in last), the scheduler's
// state (checked, then assigned), the loader position's range.
#include "optim_internal.h"
#include "schedules.h"
#include "serialize/serialize_value.h"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <mutex>

using ctorch::P;
using ctorch::PV;

namespace {

using ctorch::value::str;

// Calls a public ctorch function from inside one: its failure becomes ours.
void call(ctorch_status st) {
  if (st != CTORCH_OK) ctorch::fail(st, ctorch_last_error());
}

std::vector<at::Generator> generators() {
  std::vector<at::Generator> g{at::detail::getDefaultCPUGenerator()};
  if (at::hasCUDA()) {
    int n = static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
    for (int i = 0; i < n; ++i) g.push_back(at::globalContext().defaultGenerator(at::Device(at::kCUDA, i)));
  }
  return g;
}

at::Tensor rng_state(at::Generator &g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

P model_state(ctorch_nn_module m) {
  ctorch_tensor_dict d = nullptr;
  call(ctorch_nn_module_state_dict(&d, m));
  std::unique_ptr<ctorch_tensor_dict_s, void (*)(ctorch_tensor_dict)> own(d, ctorch_tensor_dict_free);
  P sd = PV::dict(true);  // an OrderedDict, as model.state_dict() is
  for (size_t i = 0; i < d->keys.size(); ++i) sd->put(PV::str(d->keys[i]), PV::tensor(d->values[i].detach()));
  return sd;
}

// The handles and counters of one save or load.
struct State {
  ctorch_nn_module model;
  ctorch_optimizer optimizer;
  ctorch_lr_scheduler scheduler;
  ctorch_data_loader loader;
  int64_t epoch, step;
  double metric;
};

// Each handle given (NULL: that part is not saved or loaded) must be live.
void check_handles(const State &st) {
  if (st.model) ctorch::check_handle(st.model, "model");
  if (st.optimizer) ctorch::check_handle(st.optimizer, "optimizer");
  if (st.scheduler) ctorch::check_handle(st.scheduler, "scheduler");
  if (st.loader) ctorch::check_handle(st.loader, "loader");
}

// The optimizer and scheduler given, held for the call (core/exclusive.h):
// saving or loading them while another thread steps them gets BUSY.
struct Holds {
  explicit Holds(const State &st) {
    check_handles(st);
    if (st.optimizer) opt.emplace(st.optimizer, "optimizer");
    if (st.scheduler) {
      sched.emplace(st.scheduler->s->busy, "scheduler", st.scheduler);
      sched_opt.emplace(st.scheduler->s->o->busy, "scheduler (its optimizer)", st.scheduler);
    }
  }
  std::optional<ctorch::optim::Held> opt;
  std::optional<ctorch::Exclusive> sched, sched_opt;
};

P build(const State &st) {
  check_handles(st);
  P root = PV::dict();
  if (st.model) root->put(str("model"), model_state(st.model));
  if (st.optimizer) root->put(str("optimizer"), ctorch::optim::state_dict_value(*st.optimizer->o));
  if (st.scheduler) root->put(str("scheduler"), ctorch::optim::sched::state_dict(*st.scheduler->s));
  root->put(str("epoch"), PV::integer(st.epoch));
  root->put(str("step"), PV::integer(st.step));
  root->put(str("metric"), std::isnan(st.metric) ? PV::none() : PV::real(st.metric));
  if (st.loader) {
    uint64_t epoch = 0;
    int64_t batch = 0;
    call(ctorch_data_loader_position(&epoch, &batch, st.loader));
    P l = PV::dict();
    l->put(str("epoch"), PV::integer(static_cast<int64_t>(epoch)));
    l->put(str("batch"), PV::integer(batch));
    root->put(str("loader"), l);
  }
  auto gens = generators();
  P rng = PV::dict(), cuda = PV::list({});
  rng->put(str("cpu"), PV::tensor(rng_state(gens[0])));
  for (size_t i = 1; i < gens.size(); ++i) cuda->items.push_back(PV::tensor(rng_state(gens[i])));
  rng->put(str("cuda"), cuda);
  root->put(str("rng_state"), rng);
  return root;
}

// ---- load ---------------------------------------------------------------------

[[noreturn]] void bad(const std::string &in, const std::string &msg) { ctorch::fail(CTORCH_VALUE, in + ": " + msg); }

const PV &need(const PV &d, const char *key, PV::Kind kind, const std::string &in) {
  const P *v = d.find(key);
  if (!v) bad(in, std::string("has no '") + key + "'");
  if ((*v)->kind != kind)
    bad(in, std::string("'") + key + "' is a " + ctorch::pickle_type_name((*v)->kind) + ", not a " + ctorch::pickle_type_name(kind));
  return **v;
}

// The file's model state as a dict handle, checked against the model's own
// keys and shapes (so the load that follows cannot fail half-way).
std::unique_ptr<ctorch_tensor_dict_s> model_from(const PV &sd, ctorch_nn_module m, const std::string &in) {
  ctorch_tensor_dict mine = nullptr;
  call(ctorch_nn_module_state_dict(&mine, m));
  std::unique_ptr<ctorch_tensor_dict_s, void (*)(ctorch_tensor_dict)> own(mine, ctorch_tensor_dict_free);
  auto d = std::make_unique<ctorch_tensor_dict_s>();
  for (size_t j = 0; j + 1 < sd.items.size(); j += 2) {
    const PV &k = *sd.items[j], &v = *sd.items[j + 1];
    if (k.kind != PV::Str || v.kind != PV::Tensor) bad(in, "'model' is not a dict of str -> Tensor");
    d->keys.push_back(k.s);
    d->values.push_back(v.t);
  }
  if (d->keys.size() != mine->keys.size())
    bad(in, "'model' has " + std::to_string(d->keys.size()) + " entries, the model " + std::to_string(mine->keys.size()));
  for (size_t i = 0; i < mine->keys.size(); ++i) {
    auto it = std::find(d->keys.begin(), d->keys.end(), mine->keys[i]);
    if (it == d->keys.end()) bad(in, "'model' has no '" + mine->keys[i] + "'");
    const at::Tensor &t = d->values[static_cast<size_t>(it - d->keys.begin())];
    if (t.sizes() != mine->values[i].sizes())
      bad(in, "'model." + mine->keys[i] + "' has shape " + c10::str(t.sizes()) + ", the model's " +
                  c10::str(mine->values[i].sizes()));
  }
  return d;
}

int64_t integer(const PV &d, const char *key, const std::string &in) { return need(d, key, PV::Int, in).i; }

void load(State &st, const char *path) {
  check_handles(st);
  auto file = ctorch::read_pickled(path);
  const std::string in = std::string("'") + path + "'";
  const PV &root = *file->root;
  if (root.kind != PV::Dict) bad(in, "does not hold a dict (a training state)");
  // 1. Read and check everything.
  std::unique_ptr<ctorch_tensor_dict_s> model;
  if (st.model) model = model_from(need(root, "model", PV::Dict, in), st.model, in);
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (st.optimizer) {
    const P *o = root.find("optimizer");
    if (!o) bad(in, "has no 'optimizer'");
    opt = ctorch::optim::state_dict_check(*st.optimizer->o, *o, in + "'s optimizer");
  }
  if (st.scheduler) ctorch::optim::sched::load_state_dict(*st.scheduler->s, need(root, "scheduler", PV::Dict, in), false);
  int64_t l_epoch = 0, l_batch = 0;
  if (st.loader) {
    const PV &l = need(root, "loader", PV::Dict, in);
    l_epoch = integer(l, "epoch", in + "'s loader"), l_batch = integer(l, "batch", in + "'s loader");
    int64_t batches = 0;
    call(ctorch_data_loader_num_batches(&batches, st.loader));
    if (l_epoch < 0 || l_batch < 0 || l_batch > batches)
      bad(in, "'loader' position (epoch " + std::to_string(l_epoch) + ", batch " + std::to_string(l_batch) +
                  ") does not fit the loader (" + std::to_string(batches) + " batches)");
  }
  int64_t epoch = integer(root, "epoch", in), step = integer(root, "step", in);
  double metric = NAN;
  if (const P *m = root.find("metric")) {
    if ((*m)->kind == PV::Float) metric = (*m)->f;
    else if ((*m)->kind == PV::Int) metric = static_cast<double>((*m)->i);
    else if ((*m)->kind != PV::None) bad(in, "'metric' is not a number or None");
  }
  const PV &rng = need(root, "rng_state", PV::Dict, in);
  const PV &cpu = need(rng, "cpu", PV::Tensor, in + "'s rng_state");
  const PV &cuda = need(rng, "cuda", PV::List, in + "'s rng_state");
  auto gens = generators();
  if (cpu.t.scalar_type() != at::kByte || cpu.t.dim() != 1 || cpu.t.numel() != rng_state(gens[0]).numel())
    bad(in, "'rng_state.cpu' is not a CPU generator state (torch.get_rng_state())");
  for (const P &c : cuda.items)
    if (c->kind != PV::Tensor || c->t.scalar_type() != at::kByte) bad(in, "'rng_state.cuda' holds a non-state");
  // 2. Apply.
  if (model) {
    char *report = nullptr;
    ctorch_status s = ctorch_nn_module_load_state_dict(&report, st.model, model.get(), 1);
    ctorch_string_free(report);
    call(s);
  }
  if (opt) st.optimizer->o->opt = std::move(opt);
  if (st.scheduler) ctorch::optim::sched::load_state_dict(*st.scheduler->s, need(root, "scheduler", PV::Dict, in), true);
  if (st.loader) call(ctorch_data_loader_seek(st.loader, static_cast<uint64_t>(l_epoch), l_batch));
  {
    std::lock_guard<std::mutex> lock(gens[0].mutex());
    gens[0].set_state(cpu.t.contiguous());
  }
  // A file from a machine with other GPUs restores the devices both have.
  for (size_t i = 1; i < gens.size() && i - 1 < cuda.items.size(); ++i) {
    std::lock_guard<std::mutex> lock(gens[i].mutex());
    gens[i].set_state(cuda.items[i - 1]->t.contiguous());
  }
  st.epoch = epoch, st.step = step, st.metric = metric;
}

// ---- kept checkpoints -------------------------------------------------------------

const char kPrefix[] = "checkpoint-";
const char kSuffix[] = ".pt";

// dir/checkpoint-<digits>.pt files, oldest (lowest step) first.
std::vector<std::string> kept(const std::string &dir) {
  std::vector<std::pair<int64_t, std::string>> v;
  DIR *d = opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return {};
    ctorch::fail(CTORCH_IO, "cannot list '" + dir + "': " + std::strerror(errno));
  }
  while (dirent *e = readdir(d)) {
    std::string n = e->d_name;
    const size_t p = sizeof kPrefix - 1, s = sizeof kSuffix - 1;
    if (n.size() <= p + s || n.compare(0, p, kPrefix) != 0 || n.compare(n.size() - s, s, kSuffix) != 0) continue;
    std::string digits = n.substr(p, n.size() - p - s);
    if (digits.empty() || digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    v.emplace_back(std::stoll(digits), dir + "/" + n);
  }
  closedir(d);
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (auto &x : v) out.push_back(x.second);
  return out;
}

// The metric stored in a checkpoint file, NaN when it has none or cannot be read.
double stored_metric(const std::string &path) {
  try {
    auto f = ctorch::read_pickled(path.c_str());
    const P *m = f->root->kind == PV::Dict ? f->root->find("metric") : nullptr;
    if (m && (*m)->kind == PV::Float) return (*m)->f;
    if (m && (*m)->kind == PV::Int) return static_cast<double>((*m)->i);
  } catch (const std::exception &) {
  }
  return NAN;
}


}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_train_state_save(const char *path, ctorch_nn_module model, ctorch_optimizer optimizer,
                                                 ctorch_lr_scheduler scheduler, ctorch_data_loader loader,
                                                 int64_t epoch, int64_t step, double metric) {
  CTORCH_TRY
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  const State st{model, optimizer, scheduler, loader, epoch, step, metric};
  Holds holds(st);
  ctorch::write_pickled(path, *build(st));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_train_state_load(int64_t *epoch, int64_t *step, double *metric, const char *path,
                                                 ctorch_nn_module model, ctorch_optimizer optimizer,
                                                 ctorch_lr_scheduler scheduler, ctorch_data_loader loader) {
  CTORCH_TRY
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  State st{model, optimizer, scheduler, loader, 0, 0, NAN};
  Holds holds(st);
  load(st, path);
  if (epoch) *epoch = st.epoch;
  if (step) *step = st.step;
  if (metric) *metric = st.metric;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_train_state_save_kept(const char *dir, int keep_last, ctorch_best_mode best,
                                                      ctorch_nn_module model, ctorch_optimizer optimizer,
                                                      ctorch_lr_scheduler scheduler, ctorch_data_loader loader,
                                                      int64_t epoch, int64_t step, double metric) {
  CTORCH_TRY
  const State st{model, optimizer, scheduler, loader, epoch, step, metric};
  Holds holds(st);
  ctorch::require_ptr(dir, "dir");
  if (!*dir) ctorch::fail_arg("dir", "is empty");
  if (keep_last < 1) ctorch::fail_arg("keep_last", "must be >= 1, got " + std::to_string(keep_last));
  if (best != CTORCH_BEST_NONE && best != CTORCH_BEST_MIN && best != CTORCH_BEST_MAX)
    ctorch::fail_arg("best", "not a ctorch_best_mode: " + std::to_string(static_cast<int>(best)));
  if (step < 0) ctorch::fail_arg("step", "must be >= 0 (it names the file), got " + std::to_string(step));
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    ctorch::fail(CTORCH_IO, std::string("cannot make '") + dir + "': " + std::strerror(errno));
  char name[64];
  std::snprintf(name, sizeof name, "%s%012lld%s", kPrefix, static_cast<long long>(step), kSuffix);
  const std::string d = dir, path = d + "/" + name;
  P root = build(st);
  ctorch::write_pickled(path.c_str(), *root);
  if (best != CTORCH_BEST_NONE && !std::isnan(metric)) {
    const std::string best_path = d + "/best.pt";
    double old = stored_metric(best_path);
    bool better = std::isnan(old) || (best == CTORCH_BEST_MIN ? metric < old : metric > old);
    if (better) ctorch::write_pickled(best_path.c_str(), *root);
  }
  auto files = kept(d);
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < files.size(); ++i)
    if (unlink(files[i].c_str()) != 0 && errno != ENOENT)
      ctorch::fail(CTORCH_IO, "cannot remove '" + files[i] + "': " + std::strerror(errno));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_train_state_latest(char **out, const char *dir) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(dir, "dir");
  auto files = kept(dir);
  if (files.empty()) return CTORCH_OK;
  char *p = static_cast<char *>(std::malloc(files.back().size() + 1));  // ctorch_string_free's
  if (!p) throw std::bad_alloc();
  std::memcpy(p, files.back().c_str(), files.back().size() + 1);
  *out = p;
  CTORCH_CATCH
}

}  // extern "C"
