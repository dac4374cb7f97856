// The batched generation loop (engine.h).
#include "engine.h"

#include <algorithm>
#include <cstring>

namespace lmserve {

namespace {

std::string last_error(const char *what) {
  const char *e = ctorch_last_error();
  return std::string(what) + ": " + (e && *e ? e : "failed");
}

// Where the first stop string occurs in text (npos if none), and how many
// bytes at the end of text could begin one: those are held back until the
// next piece shows whether the stop string follows.
size_t find_stop(const std::string &text, const std::vector<std::string> &stops, size_t *hold) {
  size_t first = std::string::npos;
  for (const auto &s : stops) {
    size_t at = text.find(s);
    if (at < first) first = at;
  }
  *hold = 0;
  for (const auto &s : stops) {
    size_t n = std::min(s.size() - 1, text.size());
    for (; n > *hold; --n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        *hold = n;
        break;
      }
    }
  }
  return first;
}

}  // namespace

Job::Job(GenParams p, ctorch_lm_sampler sampler, ctorch_lm_detokenizer detok)
    : params_(std::move(p)), sampler_(sampler), detok_(detok), ids_(params_.prompt) {}

Job::~Job() {
  ctorch_lm_detokenizer_free(detok_);
  ctorch_lm_sampler_free(sampler_);
}

bool Job::take(std::string *text, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait_for(lk, timeout, [&] { return ended_ || !ready_.empty(); });
  text->swap(ready_);
  ready_.clear();
  return ended_;
}

void Job::emit(const std::string &piece) {
  if (piece.empty()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ready_ += piece;
  }
  cv_.notify_all();
}

void Job::end(const char *reason, const std::string &error) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ended_ = true;
    finish_reason_ = reason;
    error_ = error;
  }
  cv_.notify_all();
}

Engine::Engine(const Model &model, const EngineOptions &opt, std::string *error) : model_(model), opt_(opt) {
  stats_.slots = opt_.slots;
  if (ctorch_lm_session_new(&session_, model_.handle, opt_.n_ctx, opt_.slots) != CTORCH_OK) {
    *error = last_error("ctorch_lm_session_new");
    session_ = nullptr;
    return;
  }
  thread_ = std::thread([this] { run(); });
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

Engine::~Engine() {
  shutdown();
  if (thread_.joinable()) thread_.join();
  ctorch_lm_session_free(session_);
}

std::shared_ptr<Job> Engine::submit(GenParams p, bool *busy, std::string *error) {
  *busy = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    // Slots all taken and the queue full: refuse now rather than hold the
    // client's connection (and an HTTP thread) for an unknown time.
    if (stop_) {
      *busy = true;
      *error = "the server is shutting down";
      return nullptr;
    }
    if (stats_.busy + static_cast<int64_t>(queue_.size()) >= opt_.slots + opt_.queue) {
      ++stats_.refused;
      *busy = true;
      *error = "the server is busy: " + std::to_string(opt_.slots) + " requests running and " +
               std::to_string(opt_.queue) + " waiting; retry later";
      return nullptr;
    }
  }
  ctorch_lm_sampler sampler = nullptr;
  ctorch_lm_detokenizer detok = nullptr;
  if (ctorch_lm_sampler_new(&sampler, p.sampler_options.c_str()) != CTORCH_OK) {
    *error = last_error("sampling options");
    return nullptr;
  }
  if (ctorch_lm_detokenizer_new(&detok, model_.handle, 1) != CTORCH_OK) {
    *error = last_error("ctorch_lm_detokenizer_new");
    ctorch_lm_sampler_free(sampler);
    return nullptr;
  }
  auto job = std::make_shared<Job>(std::move(p), sampler, detok);
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

EngineStats Engine::stats() {
  std::lock_guard<std::mutex> lk(mu_);
  EngineStats s = stats_;
  s.queued = static_cast<int64_t>(queue_.size());
  return s;
}

void Engine::run() {
  std::vector<std::shared_ptr<Job>> active;
  std::vector<int64_t> free_seqs;
  for (int64_t i = opt_.slots - 1; i >= 0; --i) free_seqs.push_back(i);
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    // Jobs whose client left, or that ended in the last step, give their
    // slot back; waiting jobs take the free slots in arrival order.
    for (auto it = active.begin(); it != active.end();) {
      Job &j = **it;
      bool ended;
      {
        std::lock_guard<std::mutex> jl(j.mu_);
        ended = j.ended_;
      }
      if (!ended && j.cancelled()) {
        ++stats_.cancelled;
        j.end("cancelled", "");
        ended = true;
      }
      if (ended) {
        release(j, free_seqs);
        it = active.erase(it);
      } else {
        ++it;
      }
    }
    while (!queue_.empty() && !free_seqs.empty()) {
      auto job = queue_.front();
      queue_.pop_front();
      if (job->cancelled()) {
        ++stats_.cancelled;
        job->end("cancelled", "");
        continue;
      }
      job->seq_ = free_seqs.back();
      free_seqs.pop_back();
      active.push_back(job);
    }
    stats_.busy = static_cast<int64_t>(active.size());
    if (active.empty()) {
      if (stop_) break;
      cv_.wait(lk);
      continue;
    }
    if (stop_) {
      for (auto &j : active) j->end("cancelled", "the server is shutting down");
      continue;
    }
    lk.unlock();
    step(active);
    lk.lock();
  }
  // The queue's jobs never started.
  for (auto &j : queue_) j->end("cancelled", "the server is shutting down");
  queue_.clear();
}

// One forward over every running job: each decoding job's last sampled id,
// then prompt ids of the jobs still in prefill, up to batch_tokens of them.
void Engine::step(std::vector<std::shared_ptr<Job>> &active) {
  std::vector<int64_t> seqs, counts, tokens;
  std::vector<Job *> rows;
  for (auto &jp : active) {
    Job &j = *jp;
    if (j.fed_ < j.params_.prompt.size()) continue;
    if (j.ended_ || j.n_generated() == 0) continue;
    seqs.push_back(j.seq_);
    counts.push_back(1);
    tokens.push_back(j.ids_.back());
    rows.push_back(&j);
  }
  int64_t budget = opt_.batch_tokens;
  for (auto &jp : active) {
    Job &j = *jp;
    if (j.fed_ >= j.params_.prompt.size()) continue;
    // At least one prompt per step makes progress, however small the budget.
    if (budget <= 0 && !rows.empty()) break;
    size_t left = j.params_.prompt.size() - j.fed_;
    size_t n = std::min(left, static_cast<size_t>(std::max<int64_t>(budget, 1)));
    seqs.push_back(j.seq_);
    counts.push_back(static_cast<int64_t>(n));
    tokens.insert(tokens.end(), j.params_.prompt.begin() + j.fed_, j.params_.prompt.begin() + j.fed_ + n);
    rows.push_back(&j);
    budget -= static_cast<int64_t>(n);
  }
  if (rows.empty()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.forwards;
    stats_.max_batch = std::max<int64_t>(stats_.max_batch, static_cast<int64_t>(rows.size()));
  }
  ctorch_tensor logits = nullptr;
  if (ctorch_lm_decode_batch(&logits, session_, seqs.data(), counts.data(), seqs.size(), tokens.data(),
                             tokens.size()) != CTORCH_OK) {
    std::string err = last_error("ctorch_lm_decode_batch");
    std::lock_guard<std::mutex> lk(mu_);
    for (Job *j : rows) {
      ++stats_.failed;
      j->end("error", err);
    }
    return;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    Job &j = *rows[i];
    bool prefill = j.fed_ < j.params_.prompt.size();
    if (prefill) {
      j.fed_ += static_cast<size_t>(counts[i]);
      if (j.fed_ < j.params_.prompt.size()) continue;  // its logits are of a middle position
    }
    if (j.cancelled()) continue;
    sample_row(j, logits, static_cast<int64_t>(i));
  }
  ctorch_tensor_free(logits);
}

void Engine::sample_row(Job &j, ctorch_tensor logits, int64_t row) {
  ctorch_tensor r = nullptr;
  int64_t id = -1;
  if (ctorch_select_int(&r, logits, 0, row) != CTORCH_OK ||
      ctorch_lm_sampler_sample(&id, j.sampler_, r, j.ids_.data(), j.ids_.size()) != CTORCH_OK) {
    std::string err = last_error("sampling");
    ctorch_tensor_free(r);
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.failed;
    j.end("error", err);
    return;
  }
  ctorch_tensor_free(r);
  after_token(j, id);
}

// Records a sampled id and decides whether the job goes on: the model's
// end of sequence and the stop strings end it with "stop"; max_tokens and
// a full context with "length".
void Engine::after_token(Job &j, int64_t id) {
  j.ids_.push_back(id);
  j.completion_tokens_.store(static_cast<int64_t>(j.n_generated()));
  if (!j.params_.ignore_eos && std::find(model_.eos.begin(), model_.eos.end(), id) != model_.eos.end()) {
    finish(j, "stop");
    return;
  }
  char *piece = nullptr;
  if (ctorch_lm_detokenizer_push(&piece, j.detok_, id) != CTORCH_OK) {
    std::string err = last_error("ctorch_lm_detokenizer_push");
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.failed;
    j.end("error", err);
    return;
  }
  j.held_ += piece;
  ctorch_string_free(piece);
  size_t hold = 0;
  size_t at = find_stop(j.held_, j.params_.stop, &hold);
  if (at != std::string::npos) {
    j.held_.resize(at);
    j.emit(j.held_);
    j.held_.clear();
    finish(j, "stop");
    return;
  }
  j.emit(j.held_.substr(0, j.held_.size() - hold));
  j.held_.erase(0, j.held_.size() - hold);
  // The next step appends this id: it must fit the context.
  int64_t length = static_cast<int64_t>(j.ids_.size());
  if (static_cast<int64_t>(j.n_generated()) >= j.params_.max_tokens || length >= opt_.n_ctx) finish(j, "length");
}

// Ends a job normally: the detokenizer's held-back bytes and any text held
// for a stop string that never came go out first.
void Engine::finish(Job &j, const char *reason) {
  char *rest = nullptr;
  if (ctorch_lm_detokenizer_flush(&rest, j.detok_) == CTORCH_OK) {
    j.held_ += rest;
    ctorch_string_free(rest);
  }
  size_t hold = 0;
  size_t at = find_stop(j.held_, j.params_.stop, &hold);
  if (at != std::string::npos) {
    j.held_.resize(at);
    reason = "stop";
  }
  j.emit(j.held_);
  j.held_.clear();
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.served;
  stats_.prompt_tokens += static_cast<int64_t>(j.params_.prompt.size());
  stats_.completion_tokens += static_cast<int64_t>(j.n_generated());
  j.end(reason, "");
}

// Gives a job's sequence back: its positions are forgotten so that the next
// request starts at 0. (Called with mu_ held, on the engine thread.)
void Engine::release(Job &j, std::vector<int64_t> &free_seqs) {
  if (j.seq_ < 0) return;
  ctorch_lm_session_rewind(session_, j.seq_, 0);
  free_seqs.push_back(j.seq_);
  j.seq_ = -1;
}

}  // namespace lmserve
