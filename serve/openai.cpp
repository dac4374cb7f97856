// Requests read and checked, responses written, in the OpenAI API's shapes (openai.h).
#include "openai.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

namespace lmserve {

using nlohmann::json;

namespace {

// Nesting deeper than this is refused before parsing: no chat request needs
// it, and a body of a million '[' must cost nothing.
constexpr int kMaxDepth = 64;
// OpenAI's own limit on stop sequences.
constexpr size_t kMaxStops = 4;

bool too_deep(const std::string &s) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

ApiError bad(const std::string &message, const std::string &param = "", const std::string &code = "") {
  ApiError e;
  e.message = message;
  e.param = param;
  e.code = code;
  return e;
}

// Fields are read through these: each says what it wants, naming the field.
bool get_number(const json &body, const char *key, double lo, double hi, double *out, ApiError *err) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_number()) {
    *err = bad(std::string(key) + " must be a number", key);
    return false;
  }
  double v = it->get<double>();
  if (!(v >= lo && v <= hi)) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s must be between %g and %g, got %g", key, lo, hi, v);
    *err = bad(msg, key);
    return false;
  }
  *out = v;
  return true;
}

bool get_int(const json &body, const char *key, int64_t lo, int64_t *out, bool *given, ApiError *err) {
  auto it = body.find(key);
  *given = false;
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_number_integer()) {
    *err = bad(std::string(key) + " must be an integer", key);
    return false;
  }
  int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                  ? INT64_MAX
                  : it->get<int64_t>();
  if (v < lo) {
    *err = bad(std::string(key) + " must be at least " + std::to_string(lo) + ", got " + std::to_string(v), key);
    return false;
  }
  *out = v;
  *given = true;
  return true;
}

bool get_bool(const json &body, const char *key, bool *out, ApiError *err) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_boolean()) {
    *err = bad(std::string(key) + " must be true or false", key);
    return false;
  }
  *out = it->get<bool>();
  return true;
}

// A field this server accepts only at its default (a feature it does not
// have): refused with a message naming it, not ignored, when set otherwise.
bool only_default(const json &body, const char *key, const json &ok_value, ApiError *err) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null() || *it == ok_value) return true;
  *err = bad(std::string(key) + " is not supported by this server (only " + (ok_value.is_null() ? "null" : ok_value.dump()) +
                 ")",
             key, "unsupported_parameter");
  return false;
}

// A message's content: a string, or an array of text parts (joined).
bool message_text(const json &content, size_t i, std::string *out, ApiError *err) {
  std::string param = "messages[" + std::to_string(i) + "].content";
  if (content.is_string()) {
    *out = content.get<std::string>();
    return true;
  }
  if (content.is_array()) {
    out->clear();
    for (const auto &part : content) {
      auto type = part.is_object() ? part.find("type") : part.end();
      if (!part.is_object() || type == part.end() || *type != "text" || !part.contains("text") ||
          !part["text"].is_string()) {
        *err = bad(param + ": only text parts ({\"type\": \"text\", \"text\": ...}) are supported", param);
        return false;
      }
      *out += part["text"].get<std::string>();
    }
    return true;
  }
  *err = bad(param + " must be a string or an array of text parts", param);
  return false;
}

// The messages, each role and text only, as ctorch_lm_chat_apply reads them.
bool read_messages(const json &body, json *out, ApiError *err) {
  auto it = body.find("messages");
  if (it == body.end()) {
    *err = bad("messages is required", "messages");
    return false;
  }
  if (!it->is_array() || it->empty()) {
    *err = bad("messages must be a non-empty array", "messages");
    return false;
  }
  static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
  *out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json &m = (*it)[i];
    std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) {
      *err = bad(at + " must be an object", at);
      return false;
    }
    for (auto f = m.begin(); f != m.end(); ++f) {
      if (f.key() != "role" && f.key() != "content" && f.key() != "name") {
        *err = bad("Unrecognized argument in " + at + ": " + f.key(), at + "." + f.key());
        return false;
      }
    }
    auto role = m.find("role");
    if (role == m.end() || !role->is_string() || !roles.count(role->get<std::string>())) {
      *err = bad(at + ".role must be one of system, developer, user, assistant, tool", at + ".role");
      return false;
    }
    auto content = m.find("content");
    if (content == m.end()) {
      *err = bad(at + ".content is required", at + ".content");
      return false;
    }
    std::string text;
    if (!message_text(*content, i, &text, err)) return false;
    // Chat templates know "system"; OpenAI's newer name for it is "developer".
    std::string r = role->get<std::string>() == "developer" ? "system" : role->get<std::string>();
    out->push_back({{"role", r}, {"content", text}});
  }
  return true;
}

bool tokenize(const Model &model, const std::string &text, bool add_special, std::vector<int64_t> *ids,
              ApiError *err) {
  ctorch_tensor t = nullptr;
  int64_t n = 0;
  void *data = nullptr;
  if (ctorch_lm_tokenize(&t, model.handle, text.c_str(), add_special, 1) != CTORCH_OK ||
      ctorch_tensor_numel(&n, t) != CTORCH_OK || ctorch_tensor_data_ptr(&data, t) != CTORCH_OK) {
    *err = bad(std::string("the prompt cannot be tokenized: ") + ctorch_last_error());
    ctorch_tensor_free(t);
    return false;
  }
  const int64_t *p = static_cast<const int64_t *>(data);
  ids->assign(p, p + n);
  ctorch_tensor_free(t);
  return true;
}

// /v1/completions' prompt: a string, an array of one string, or an array of token ids.
bool read_prompt(const json &body, const Model &model, std::vector<int64_t> *ids, ApiError *err) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) {
    *err = bad("prompt is required", "prompt");
    return false;
  }
  const json *p = &*it;
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) p = &(*p)[0];
  if (p->is_string()) return tokenize(model, p->get<std::string>(), true, ids, err);
  if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
    for (const auto &v : *p) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= model.n_vocab) {
        *err = bad("prompt: token ids must be integers in [0, " + std::to_string(model.n_vocab) + ")", "prompt");
        return false;
      }
      ids->push_back(v.get<int64_t>());
    }
    return true;
  }
  *err = bad("prompt must be a string, an array of one string or an array of token ids (one prompt per request)",
             "prompt");
  return false;
}

bool read_stop(const json &body, std::vector<std::string> *stops, ApiError *err) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return true;
  if (it->is_string()) {
    if (!it->get<std::string>().empty()) stops->push_back(it->get<std::string>());
    return true;
  }
  if (!it->is_array() || it->size() > kMaxStops) {
    *err = bad("stop must be a string or an array of at most 4 strings", "stop");
    return false;
  }
  for (const auto &s : *it) {
    if (!s.is_string()) {
      *err = bad("stop must be a string or an array of at most 4 strings", "stop");
      return false;
    }
    if (!s.get<std::string>().empty()) stops->push_back(s.get<std::string>());
  }
  return true;
}

// The sampler: OpenAI's defaults (temperature 1, top_p 1) and a fresh seed
// unless the request gives one.
bool read_sampling(const json &body, std::string *options, ApiError *err) {
  double temperature = 1, top_p = 1, min_p = 0, freq = 0, pres = 0, rep = 1;
  int64_t top_k = 0, seed = 0;
  bool has_k = false, has_seed = false;
  if (!get_number(body, "temperature", 0, 2, &temperature, err) || !get_number(body, "top_p", 0, 1, &top_p, err) ||
      !get_number(body, "min_p", 0, 1, &min_p, err) || !get_number(body, "frequency_penalty", -2, 2, &freq, err) ||
      !get_number(body, "presence_penalty", -2, 2, &pres, err) ||
      !get_number(body, "repetition_penalty", 1e-3, 100, &rep, err) ||
      !get_int(body, "top_k", 0, &top_k, &has_k, err) || !get_int(body, "seed", INT64_MIN, &seed, &has_seed, err))
    return false;
  if (top_p <= 0) {
    *err = bad("top_p must be greater than 0", "top_p");
    return false;
  }
  // OpenAI's seed is any integer; the sampler's is a non-negative one: the
  // same request seed always maps to the same sampler seed.
  uint64_t s = has_seed ? static_cast<uint64_t>(seed)
                        : static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
  s &= 0x7fffffffffffffffULL;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "temperature=%.9g,top_p=%.9g,min_p=%.9g,top_k=%lld,frequency_penalty=%.9g,presence_penalty=%.9g,"
                "repetition_penalty=%.9g,seed=%llu",
                temperature, top_p, min_p, static_cast<long long>(top_k), freq, pres, rep,
                static_cast<unsigned long long>(s));
  *options = buf;
  return true;
}

json usage_of(const Job &job) {
  return {{"prompt_tokens", job.prompt_tokens()},
          {"completion_tokens", job.completion_tokens()},
          {"total_tokens", job.prompt_tokens() + job.completion_tokens()}};
}

json head(const ApiRequest &req, const Model &model, const std::string &id, int64_t created, bool chunk) {
  const char *object = req.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model.id},
          {"system_fingerprint", nullptr}};
}

json finish_value(const std::string &reason) { return reason.empty() ? json(nullptr) : json(reason); }

}  // namespace

std::string dump(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string error_body(const ApiError &e) {
  json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  return dump(json{{"error", err}});
}

bool parse_request(const std::string &body_text, bool chat, const Model &model, const ApiLimits &limits,
                   ApiRequest *out, ApiError *err) {
  if (too_deep(body_text)) {
    *err = bad("the request body nests deeper than " + std::to_string(kMaxDepth) + " levels");
    return false;
  }
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::parse_error &e) {
    *err = bad(std::string("the request body is not valid JSON: ") + e.what());
    return false;
  }
  if (!body.is_object()) {
    *err = bad("the request body must be a JSON object");
    return false;
  }
  // Every field OpenAI's API defines for the endpoint is known; any other is
  // refused by name, as OpenAI's API does (a misspelt option must not pass
  // silently). Fields for features this server lacks are accepted only at
  // their defaults.
  static const std::set<std::string> common = {"model", "max_tokens", "temperature", "top_p", "n", "stream",
      "stream_options", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "seed", "user",
      "top_k", "min_p", "repetition_penalty", "ignore_eos", "service_tier", "metadata", "store"};
  static const std::set<std::string> chat_only = {"messages", "max_completion_tokens", "top_logprobs",
      "response_format", "tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"};
  static const std::set<std::string> completion_only = {"prompt", "echo", "suffix", "best_of"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string &k = it.key();
    if (!common.count(k) && !(chat ? chat_only : completion_only).count(k)) {
      *err = bad("Unrecognized request argument supplied: " + k, k);
      return false;
    }
  }
  auto model_it = body.find("model");
  if (model_it == body.end() || !model_it->is_string()) {
    *err = bad("model is required (a string; this server serves \"" + model.id + "\")", "model");
    return false;
  }
  if (model_it->get<std::string>() != model.id) {
    *err = bad("The model `" + model_it->get<std::string>() + "` does not exist; this server serves \"" + model.id +
                   "\"",
               "model", "model_not_found");
    err->status = 404;
    return false;
  }
  int64_t n = 1;
  bool given = false;
  if (!get_int(body, "n", 1, &n, &given, err)) return false;
  if (n != 1) {
    *err = bad("n must be 1: this server returns one choice per request", "n", "unsupported_parameter");
    return false;
  }
  if (!only_default(body, "logprobs", chat ? json(false) : json(nullptr), err) ||
      !only_default(body, "top_logprobs", nullptr, err) || !only_default(body, "echo", false, err) ||
      !only_default(body, "suffix", nullptr, err) || !only_default(body, "best_of", 1, err) ||
      !only_default(body, "tools", nullptr, err) || !only_default(body, "tool_choice", "none", err) ||
      !only_default(body, "functions", nullptr, err) || !only_default(body, "function_call", "none", err) ||
      !only_default(body, "response_format", json{{"type", "text"}}, err) ||
      !only_default(body, "store", false, err))
    return false;
  auto bias = body.find("logit_bias");
  if (bias != body.end() && !bias->is_null() && !(bias->is_object() && bias->empty())) {
    *err = bad("logit_bias is not supported by this server", "logit_bias", "unsupported_parameter");
    return false;
  }
  out->chat = chat;
  if (!get_bool(body, "stream", &out->stream, err) || !get_bool(body, "ignore_eos", &out->gen.ignore_eos, err))
    return false;
  auto so = body.find("stream_options");
  if (so != body.end() && !so->is_null()) {
    if (!so->is_object() || !out->stream) {
      *err = bad("stream_options must be an object, and only with stream: true", "stream_options");
      return false;
    }
    for (auto f = so->begin(); f != so->end(); ++f) {
      if (f.key() != "include_usage") {
        *err = bad("Unrecognized argument in stream_options: " + f.key(), "stream_options." + f.key());
        return false;
      }
    }
    if (!get_bool(*so, "include_usage", &out->include_usage, err)) return false;
  }
  GenParams &g = out->gen;
  if (!read_stop(body, &g.stop, err) || !read_sampling(body, &g.sampler_options, err)) return false;
  // The prompt, as ids.
  if (chat) {
    json messages;
    if (!read_messages(body, &messages, err)) return false;
    char *text = nullptr;
    std::string m = dump(messages);
    if (ctorch_lm_chat_apply(&text, model.handle, m.c_str(), 1,
                             limits.chat_template.empty() ? nullptr : limits.chat_template.c_str()) != CTORCH_OK) {
      *err = bad(std::string("the messages cannot be rendered with the chat template: ") + ctorch_last_error(),
                 "messages");
      return false;
    }
    std::string rendered = text;
    ctorch_string_free(text);
    // The template writes the specials it wants (a BOS among them), as
    // transformers' apply_chat_template(tokenize=True) counts on.
    if (!tokenize(model, rendered, false, &g.prompt, err)) return false;
  } else if (!read_prompt(body, model, &g.prompt, err)) {
    return false;
  }
  if (g.prompt.empty()) {
    *err = bad("the prompt is empty (no tokens)", chat ? "messages" : "prompt");
    return false;
  }
  int64_t np = static_cast<int64_t>(g.prompt.size());
  if (np > limits.max_prompt_tokens) {
    *err = bad("the prompt has " + std::to_string(np) + " tokens; this server takes at most " +
                   std::to_string(limits.max_prompt_tokens),
               chat ? "messages" : "prompt", "context_length_exceeded");
    return false;
  }
  // max_tokens: at most what the context leaves (and the server's cap);
  // OpenAI's default is "until the end", here the same bounded by those.
  int64_t room = limits.n_ctx - np;
  int64_t cap = limits.max_tokens > 0 ? std::min(room, limits.max_tokens) : room;
  int64_t mt = cap, mct = cap;
  bool has_mt = false, has_mct = false;
  if (!get_int(body, "max_tokens", 1, &mt, &has_mt, err)) return false;
  if (chat && !get_int(body, "max_completion_tokens", 1, &mct, &has_mct, err)) return false;
  g.max_tokens = std::max<int64_t>(1, std::min({mt, mct, cap}));
  return true;
}

json completion_response(const ApiRequest &req, const Model &model, const std::string &id, int64_t created,
                         const std::string &text, const Job &job) {
  json r = head(req, model, id, created, false);
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_value(job.finish_reason())}};
  if (req.chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
  else
    choice["text"] = text;
  r["choices"] = json::array({choice});
  r["usage"] = usage_of(job);
  return r;
}

json stream_chunk(const ApiRequest &req, const Model &model, const std::string &id, int64_t created,
                  const std::string &text, const std::string &finish_reason, bool first) {
  json r = head(req, model, id, created, true);
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_value(finish_reason)}};
  if (req.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (first || !text.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  r["choices"] = json::array({choice});
  if (req.include_usage) r["usage"] = nullptr;
  return r;
}

json usage_chunk(const ApiRequest &req, const Model &model, const std::string &id, int64_t created,
                 const Job &job) {
  json r = head(req, model, id, created, true);
  r["choices"] = json::array();
  r["usage"] = usage_of(job);
  return r;
}

}  // namespace lmserve
