// Chat templates: the Jinja subset the models' templates use (statements
// for/if/elif/else/set/macro, filters, tests, loop variables, string and
// list methods, raise_exception), rendered as transformers'
// apply_chat_template renders them (jinja2 with trim_blocks and
// lstrip_blocks, keep_trailing_newline off). Rendering is bounded (steps,
// output bytes, recursion depth): a template that exceeds a bound, or uses
// what the subset lacks, is refused by name. Errors throw
// ctorch::StatusError (INVALID_ARGUMENT).
#pragma once

#include <string>

#include "json/json.h"

namespace ctorch {
namespace lm {

struct ChatInputs {
  const json::Value *messages = nullptr;  // the messages array (objects with role, content, ...)
  const json::Value *tools = nullptr;     // the tools' JSON schemas (an array), or none
  bool add_generation_prompt = false;
  std::string bos_token, eos_token;
};

// Renders tmpl (a template's text). `source` names the template in messages.
std::string render_chat_template(const std::string &tmpl, const ChatInputs &in, const std::string &source);

// The text of a built-in template ("chatml", "llama2", "llama3",
// "mistral", "zephyr"), or nullptr for another name.
const char *builtin_chat_template(const std::string &name);

}  // namespace lm
}  // namespace ctorch
