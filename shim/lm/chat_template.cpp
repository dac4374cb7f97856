// Chat templates: the built-in templates and render_chat_template (the
// variables transformers' apply_chat_template gives a template).
#include "chat_template.h"
#include "chat_template_internal.h"
#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace {

// The built-in templates: texts of their own whose output equals that of
// the models' templates (tests/lm/chat_* compares them on conversations).
struct Builtin {
  const char *name, *text;
};
const Builtin kBuiltins[] = {
    // ChatML (OpenHermes, Qwen without its default system line, SmolLM2 without its own)
    {"chatml",
     "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
     "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"},
    // Llama 2 chat: the system text joins the first user turn inside <<SYS>>.
    {"llama2",
     "{% set sys = messages[0].content if messages[0].role == 'system' else none %}"
     "{% set turns = messages[1:] if sys is not none else messages %}"
     "{% for m in turns %}"
     "{% if (m.role == 'user') != loop.index0 is even %}"
     "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
     "{% set text = ('<<SYS>>\\n' ~ sys ~ '\\n<</SYS>>\\n\\n' ~ m.content) if loop.first and sys is not none else m.content %}"
     "{% if m.role == 'user' %}{{ bos_token }}[INST] {{ text | trim }} [/INST]"
     "{% elif m.role == 'assistant' %} {{ text | trim }} {{ eos_token }}{% endif %}"
     "{% endfor %}"},
    // Llama 3 instruct
    {"llama3",
     "{% for m in messages %}{% if loop.first %}{{ bos_token }}{% endif %}"
     "<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
     "{{ m.content | trim }}<|eot_id|>{% endfor %}"
     "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"},
    // Mistral instruct v0.1: user and assistant turns only, alternating.
    {"mistral",
     "{{ bos_token }}{% for m in messages %}"
     "{% if m.role not in ['user', 'assistant'] %}{{ raise_exception('Only user and assistant roles are supported!') }}"
     "{% elif (m.role == 'user') != loop.index0 is even %}"
     "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
     "{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]{% else %}{{ m.content }}{{ eos_token }}{% endif %}"
     "{% endfor %}"},
    // Zephyr (HuggingFaceH4/zephyr-7b-beta, TinyLlama chat)
    {"zephyr",
     "{% for m in messages %}{% if m.role in ['user', 'system', 'assistant'] %}<|{{ m.role }}|>\n"
     "{{ m.content }}{{ eos_token }}\n{% endif %}"
     "{% if loop.last and add_generation_prompt %}<|assistant|>\n{% endif %}{% endfor %}"},
};

}  // namespace

namespace {
// transformers gives a message's reasoning under the name each family of
// templates reads: {"thinking": r, **message, "reasoning_content": r}, r
// the first non-null of reasoning_content, thinking, reasoning.
tmpl::Value with_reasoning_aliases(tmpl::Value messages) {
  if (messages.kind != tmpl::Value::List) return messages;
  tmpl::ValueList out;
  for (const auto &m : *messages.l) {
    const tmpl::Value *r = nullptr;
    for (const char *k : {"reasoning_content", "thinking", "reasoning"}) {
      const tmpl::Value *v = m.find(k);
      if (!r && v && v->kind != tmpl::Value::None) r = v;
    }
    if (!r) {
      out.push_back(m);
      continue;
    }
    tmpl::ValueDict d{{"thinking", *r}};
    for (const auto &e : *m.d) {
      if (e.first == "thinking") d[0].second = e.second;
      else d.push_back(e);
    }
    bool found = false;
    for (auto &e : d)
      if (e.first == "reasoning_content") {
        e.second = *r;
        found = true;
      }
    if (!found) d.emplace_back("reasoning_content", *r);
    out.push_back(tmpl::Value::dict(std::move(d)));
  }
  return tmpl::Value::list(std::move(out));
}
}  // namespace

const char *builtin_chat_template(const std::string &name) {
  for (const auto &b : kBuiltins)
    if (name == b.name) return b.text;
  return nullptr;
}

std::string render_chat_template(const std::string &text, const ChatInputs &in, const std::string &source) {
  return tmpl::render_bounded(text, in, source, tmpl::Bounds());
}

std::string tmpl::render_bounded(const std::string &text, const ChatInputs &in, const std::string &source,
                                 const Bounds &bounds) {
  size_t bad = 0;
  if (!json::valid_utf8(text.data(), text.size(), &bad))
    throw StatusError(CTORCH_INVALID_ARGUMENT,
                      "chat template " + source + ": not valid UTF-8 at byte " + std::to_string(bad));
  tmpl::NodePtr body = tmpl::parse_template(text, source, bounds);
  tmpl::ValueDict vars = tmpl::builtin_globals();
  // What transformers' render_jinja_template passes: messages, tools and
  // documents (None when not given), add_generation_prompt, the special
  // tokens' texts.
  vars.emplace_back("messages", with_reasoning_aliases(in.messages ? tmpl::from_json(*in.messages) : tmpl::Value::list({})));
  vars.emplace_back("tools", in.tools ? tmpl::from_json(*in.tools) : tmpl::Value::none());
  vars.emplace_back("documents", tmpl::Value::none());
  vars.emplace_back("add_generation_prompt", tmpl::Value::boolean(in.add_generation_prompt));
  vars.emplace_back("bos_token", tmpl::Value::str(in.bos_token));
  vars.emplace_back("eos_token", tmpl::Value::str(in.eos_token));
  tmpl::Renderer r(source, bounds);
  return r.render(*body, std::move(vars));
}

}  // namespace lm
}  // namespace ctorch
