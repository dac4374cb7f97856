// The OpenAI API's side of ctorch-lm-serve: requests of /v1/chat/completions
// and /v1/completions read and checked into the engine's GenParams, and the
// responses, stream chunks and errors written in the shapes OpenAI's API
// uses (and its official clients parse).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "engine.h"

namespace lmserve {

// Limits and defaults the server was started with.
struct ApiLimits {
  int64_t max_prompt_tokens = 0;  // prompts longer are refused
  int64_t max_tokens = 0;         // a request's max_tokens is capped at this (0: the context)
  int64_t n_ctx = 0;              // positions per sequence
  std::string chat_template;      // "" for the model's own, else ctorch_lm_chat_apply's template_text
};

// An error as OpenAI's API returns it:
// {"error": {"message", "type", "param", "code"}} with an HTTP status.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;              // "" is null
  std::string code;               // "" is null
};

std::string error_body(const ApiError &e);

// A checked request.
struct ApiRequest {
  bool chat = true;               // /v1/chat/completions, else /v1/completions
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  GenParams gen;
};

// Reads, checks and tokenizes one request body. false and *err when the
// request is refused.
bool parse_request(const std::string &body, bool chat, const Model &model, const ApiLimits &limits, ApiRequest *out,
                   ApiError *err);

// The response of a finished non-streaming request.
nlohmann::json completion_response(const ApiRequest &req, const Model &model, const std::string &id, int64_t created,
                                   const std::string &text, const Job &job);
// One streaming chunk: text (the delta), and the finish reason on the last
// one ("" while running). first: the chat stream's opening chunk, carrying
// the assistant role.
nlohmann::json stream_chunk(const ApiRequest &req, const Model &model, const std::string &id, int64_t created,
                            const std::string &text, const std::string &finish_reason, bool first);
// The chunk with usage and no choices that stream_options.include_usage asks for.
nlohmann::json usage_chunk(const ApiRequest &req, const Model &model, const std::string &id, int64_t created,
                           const Job &job);

// JSON text for any output: invalid UTF-8 (never expected: the detokenizer
// writes U+FFFD for it) becomes U+FFFD rather than an exception.
std::string dump(const nlohmann::json &j);

}  // namespace lmserve
