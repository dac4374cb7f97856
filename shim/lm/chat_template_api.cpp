// ctorch_lm_chat_apply: the messages checked, the template chosen (the
// model's, a built-in by name, or the caller's text), rendered.
#include <cstdlib>
#include <cstring>

#include "chat_template.h"
#include "core/internal.h"
#include "lm_handles.h"
#include "text/text.h"
#include "model.h"

namespace ctorch {
namespace lm {
namespace {

// The messages: a JSON array of objects, each with string "role" and "content".
json::Value parse_messages(const char *text) {
  json::Value v;
  try {
    v = json::parse(text, strlen(text));
  } catch (const json::JsonError &e) {
    fail_arg("messages_json", std::string("not valid JSON: ") + e.what());
  }
  if (v.kind != json::Value::Array) fail_arg("messages_json", "must be a JSON array of messages");
  for (size_t k = 0; k < v.items.size(); k++) {
    const json::Value &m = v.items[k];
    std::string at = "message " + std::to_string(k);
    if (m.kind != json::Value::Object) fail_arg("messages_json", at + " is not an object");
    const json::Value *role = m.find("role"), *content = m.find("content");
    if (!role || role->kind != json::Value::String) fail_arg("messages_json", at + " has no string \"role\"");
    if (!content || content->kind != json::Value::String)
      fail_arg("messages_json", at + " has no string \"content\"");
  }
  return v;
}

}  // namespace
}  // namespace lm
}  // namespace ctorch

CTORCH_API ctorch_status ctorch_lm_chat_apply(char **out_text, ctorch_lm_model m, const char *messages_json,
                                              int add_generation_prompt, const char *template_text) {
  CTORCH_TRY
  ctorch::require_out(out_text, "out_text");
  *out_text = nullptr;
  ctorch::require_ptr(m, "m");
  ctorch::require_ptr(messages_json, "messages_json");
  ctorch::json::Value messages = ctorch::lm::parse_messages(messages_json);
  std::shared_ptr<const ctorch::lm::Tokenizer> tok = m->model->tokenizer();
  std::string text, source;
  if (!template_text) {
    // The model's: tokenizer_config.json's, chat_template.jinja's (transformers 5) or the GGUF's.
    text = m->model->chat_template();
    if (text.empty())
      ctorch::fail_arg("template_text", "the model has no chat template: give a template's text or a built-in name "
                                "(chatml, llama2, llama3, mistral, zephyr)");
    source = "(the model's)";
  } else if (const char *b = ctorch::lm::builtin_chat_template(template_text)) {
    text = b;
    source = std::string("'") + template_text + "'";
  } else {
    text = template_text;
    source = "(template_text)";
  }
  ctorch::lm::ChatInputs in;
  in.messages = &messages;
  in.add_generation_prompt = add_generation_prompt != 0;
  if (tok) {
    in.bos_token = tok->bos_text();
    in.eos_token = tok->eos_text();
  }
  std::string s = ctorch::lm::render_chat_template(text, in, source);
  *out_text = ctorch::text::c_string(s);
  CTORCH_CATCH
}
