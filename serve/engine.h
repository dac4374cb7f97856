// The generation engine of ctorch-lm-serve: one shared model, one session
// whose sequences are the request slots, and one thread that advances every
// running request together through ctorch_lm_decode_batch (a prompt's prefill
// and the other requests' next tokens in the same forward), samples each
// row with the request's own sampler and hands the text to the request's
// HTTP thread. Requests beyond the slots wait in a bounded queue; beyond
// the queue they are refused (the HTTP layer answers 503).
#pragma once

#include <ctorch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lmserve {

// The loaded model and what the server reads from its description.
struct Model {
  ctorch_lm_model handle = nullptr;
  std::string id;                 // the name /v1/models lists and requests must name
  std::vector<int64_t> eos;       // end-of-sequence ids
  int64_t n_ctx_train = 0;
  int64_t n_vocab = 0;
  bool has_chat_template = false;
  std::string description;        // ctorch_lm_describe's JSON
};

// What one generation needs, checked by the HTTP layer before it is submitted.
struct GenParams {
  std::vector<int64_t> prompt;    // at least one id
  int64_t max_tokens = 1;         // new ids at most (>= 1)
  std::string sampler_options;    // ctorch_lm_sampler_new's "key=value,..."
  std::vector<std::string> stop;  // stop strings (non-empty)
  bool ignore_eos = false;        // go on past the model's end of sequence (fixed-length runs)
};

// One request as both sides see it: the engine thread appends text and ends
// it; the HTTP thread takes the text as it comes, or cancels.
class Job {
 public:
  Job(GenParams p, ctorch_lm_sampler sampler, ctorch_lm_detokenizer detok);
  ~Job();
  Job(const Job &) = delete;
  Job &operator=(const Job &) = delete;

  // Waits until there is new text or the job has ended, at most `timeout`.
  // Moves the new text into *text; returns true once the job has ended and
  // all of its text has been taken.
  bool take(std::string *text, std::chrono::milliseconds timeout);
  // Asks the engine to stop this job and free its slot (the client left).
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Valid once take() has returned true.
  const std::string &finish_reason() const { return finish_reason_; }
  const std::string &error() const { return error_; }
  int64_t prompt_tokens() const { return static_cast<int64_t>(params_.prompt.size()); }
  int64_t completion_tokens() const { return completion_tokens_.load(); }

 private:
  friend class Engine;
  void emit(const std::string &piece);
  void end(const char *reason, const std::string &error);

  GenParams params_;
  ctorch_lm_sampler sampler_;
  ctorch_lm_detokenizer detok_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> completion_tokens_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::string ready_;             // text not yet taken
  bool ended_ = false;
  std::string finish_reason_, error_;

  // The engine thread's own state of the job.
  int64_t seq_ = -1;              // the session sequence (slot) it runs in
  size_t fed_ = 0;                // prompt ids already decoded
  // The prompt and the ids generated so far: what the sampler's penalties
  // see, as ctorch_lm_stream's do (transformers' input_ids).
  std::vector<int64_t> ids_;
  size_t n_generated() const { return ids_.size() - params_.prompt.size(); }
  std::string held_;              // text held back: it may start a stop string
};

struct EngineOptions {
  int64_t slots = 4;              // sequences decoded together
  int64_t n_ctx = 2048;           // positions per sequence
  int64_t queue = 16;             // requests that may wait for a slot
  int64_t batch_tokens = 256;     // prompt ids one forward takes at most (beside one per running request)
};

struct EngineStats {
  int64_t slots = 0, busy = 0, queued = 0;
  int64_t served = 0, cancelled = 0, failed = 0, refused = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t forwards = 0;           // ctorch_lm_decode_batch calls
  int64_t max_batch = 0;          // the most sequences one of them decoded together
};

class Engine {
 public:
  // Makes the session (slots sequences of n_ctx positions). On failure
  // *error says why and the engine must not be used.
  Engine(const Model &model, const EngineOptions &opt, std::string *error);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  bool ok() const { return session_ != nullptr; }
  // Ends every running and waiting job (the server is stopping) and refuses
  // new ones; the destructor does it too.
  void shutdown();
  int64_t n_ctx() const { return opt_.n_ctx; }
  // Queues a job; nullptr (and *error) when the queue is full or the
  // sampler or detokenizer cannot be made (*busy tells which).
  std::shared_ptr<Job> submit(GenParams p, bool *busy, std::string *error);
  EngineStats stats();

 private:
  void run();
  void step(std::vector<std::shared_ptr<Job>> &active);
  void sample_row(Job &job, ctorch_tensor logits, int64_t row);
  void after_token(Job &job, int64_t id);
  void release(Job &job, std::vector<int64_t> &free_seqs);
  void finish(Job &job, const char *reason);

  const Model &model_;
  EngineOptions opt_;
  ctorch_lm_session session_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace lmserve
