// Private to lm/'s model files: where a model's tensors come from (a
// folder's safetensors, a GGUF file, or drawn at random), asked for by
// transformers' names, and the assembly of those tensors into Weights.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lm/model.h"

namespace ctorch {
namespace lm {

// What a tensor is, for a random source (matrices drawn, norms 1, biases 0).
enum class WeightKind { matrix, norm, bias };

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // The tensor transformers names `name` (e.g. "model.layers.0.self_attn.q_proj.weight"),
  // on the CPU in any floating dtype, shaped `shape` as transformers holds
  // it (a Conv1D's [in, out] for gpt2). Refuses a missing tensor or
  // another shape, naming both.
  virtual at::Tensor get(const std::string &name, const std::vector<int64_t> &shape, WeightKind kind) = 0;
  virtual bool has(const std::string &name) const = 0;
  // The matrix `name` (shape as get() takes it) as packed rows in Linear's
  // [out, in] order, where the source holds it in a quantised type the
  // packed kernels run; an undefined QWeight otherwise (get() has it).
  virtual QWeight get_packed(const std::string &name, const std::vector<int64_t> &shape) {
    (void)name;
    (void)shape;
    return QWeight();
  }
  // For messages: the file or "random".
  virtual std::string what() const = 0;
};

// Builds the weights of c from src in opt's dtype on opt's device; notes
// what it did in report.
Weights assemble_weights(const ModelConfig &c, const LoadOptions &opt, WeightSource &src,
                         std::vector<std::string> &report);

// Model's loaders (Model::load's friends): a folder (model_load.cpp), a
// GGUF file (model_gguf.cpp), and the weights of either once the
// configuration is known (from make(), or drawn at random with init=random,
// after checking that they fit in memory).
struct ModelBuilder {
  static std::shared_ptr<Model> folder(const std::string &dir, const LoadOptions &opt);
  static std::shared_ptr<Model> gguf(const std::string &path, const LoadOptions &opt);
  static void build(Model &m, const std::function<std::unique_ptr<WeightSource>()> &make);
};

// A source drawing each tensor from a normal(0, 0.02) with a generator
// seeded from `seed` (norm weights 1, biases 0).
std::unique_ptr<WeightSource> random_source(uint64_t seed);

}  // namespace lm
}  // namespace ctorch
