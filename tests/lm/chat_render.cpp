// Renders chat templates with shim/lm's interpreter, for the comparison with
// transformers (chat_vs_transformers.py). Reads from stdin a JSON object
//   {"cases": [{"template": TEXT or "builtin": NAME, "messages": [...], "tools": [...] (optional),
//               "add_generation_prompt": BOOL, "bos_token": S, "eos_token": S}, ...]}
// and writes one JSON array: for each case {"text": ...} or {"error": ...}.
// Linked with the interpreter's objects (not libctorch, which exports only
// the C API).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "core/internal.h"
#include "json/json.h"
#include "lm/chat_template.h"

using namespace ctorch;

int main() {
  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  json::Value root = json::parse(in.data(), in.size());
  const json::Value *cases = root.find("cases");
  if (!cases) return 2;
  std::string out = "[";
  for (size_t k = 0; k < cases->items.size(); k++) {
    const json::Value &c = cases->items[k];
    lm::ChatInputs ci;
    ci.messages = c.find("messages");
    ci.tools = c.find("tools");
    const json::Value *agp = c.find("add_generation_prompt");
    ci.add_generation_prompt = agp && agp->boolean;
    if (const json::Value *b = c.find("bos_token")) ci.bos_token = b->text;
    if (const json::Value *e = c.find("eos_token")) ci.eos_token = e->text;
    std::string text;
    if (const json::Value *b = c.find("builtin")) {
      const char *t = lm::builtin_chat_template(b->text);
      if (!t) return 3;
      text = t;
    } else {
      text = c.find("template")->text;
    }
    out += k ? ",\n" : "\n";
    try {
      std::string r = lm::render_chat_template(text, ci, "case " + std::to_string(k));
      out += "{\"text\": ";
      json::append_string(out, r);
    } catch (const StatusError &e) {
      out += "{\"error\": ";
      json::append_string(out, e.what());
    }
    out += "}";
  }
  out += "\n]\n";
  fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
