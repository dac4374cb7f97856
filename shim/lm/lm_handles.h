// The handle structs of lm/'s entry points (private to lm/).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/exclusive.h"
#include "core/internal.h"
#include "lm/sampler.h"
#include "lm/tokenizer.h"

namespace ctorch {
namespace lm {
class Model;    // model.h: configuration, weights, forward
class Session;  // session.h: the KV cache of n_seq sequences
}  // namespace lm
}  // namespace ctorch

struct ctorch_lm_model_s {
  std::shared_ptr<ctorch::lm::Model> model;
  ctorch::Live<ctorch_lm_model_s> live{this};  // last: see core/internal.h
};

struct ctorch_lm_session_s {
  std::shared_ptr<ctorch::lm::Session> session;
  ctorch::Live<ctorch_lm_session_s> live{this};
};

struct ctorch_lm_sampler_s {
  std::shared_ptr<ctorch::lm::Sampler> sampler;
  ctorch::Live<ctorch_lm_sampler_s> live{this};
};

struct ctorch_lm_detokenizer_s {
  std::unique_ptr<ctorch::lm::StreamDecoder> dec;
  ctorch::Busy busy;  // one thread at a time (ctorch::Exclusive)
  ctorch::Live<ctorch_lm_detokenizer_s> live{this};
};
