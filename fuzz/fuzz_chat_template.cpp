// Harness: bytes as a chat template and the messages it renders (shim/lm's
// interpreter). Byte 0: bit 0 is add_generation_prompt; the rest up to the
// first NUL is the template's text, after it the messages' JSON (a default
// two-message conversation when there is no NUL; an input whose messages
// are not valid JSON is skipped). Unlike the other harnesses it calls the
// interpreter directly, not the C API: ctorch_lm_chat_apply needs a loaded
// model, and here the template is the stranger's input. The bounds are
// tighter than the library's so that each input stays fast under the
// sanitizers. Properties:
//   - rendering returns or refuses with INVALID_ARGUMENT, a message naming
//     the template ("chat template ..."): no other exception, no crash;
//   - what it returns is within the output bound and valid UTF-8;
//   - rendering twice gives the same text (no state survives a render).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/internal.h"
#include "json/json.h"
#include "lm/chat_template.h"
#include "lm/chat_template_internal.h"

namespace {

[[noreturn]] void violation(const char *what, const std::string &detail) {
  std::fprintf(stderr, "CONTRACT VIOLATION in the chat template interpreter: %s: %.400s\n", what, detail.c_str());
  std::abort();
}

bool render(const std::string &text, const ctorch::lm::ChatInputs &in, const ctorch::lm::tmpl::Bounds &b,
            std::string *out) {
  try {
    *out = ctorch::lm::tmpl::render_bounded(text, in, "(fuzz)", b);
    return true;
  } catch (const ctorch::StatusError &e) {
    if (e.status() != CTORCH_INVALID_ARGUMENT) violation("a refusal that is not INVALID_ARGUMENT", e.what());
    if (std::strncmp(e.what(), "chat template (fuzz)", 20) != 0) violation("a refusal not naming the template", e.what());
    return false;
  } catch (const std::bad_alloc &) {
    return false;  // an input that would exhaust memory (new_throws.cpp)
  } catch (const std::exception &e) {
    violation("an exception other than StatusError", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  std::string rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  size_t nul = rest.find('\0');
  std::string text = rest.substr(0, nul);
  std::string msgs = nul == std::string::npos
                         ? std::string("[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"Hi\"}]")
                         : rest.substr(nul + 1);
  ctorch::json::Value messages;
  try {
    messages = ctorch::json::parse(msgs.data(), msgs.size());
  } catch (const ctorch::json::JsonError &) {
    return 0;
  }
  ctorch::lm::ChatInputs in;
  in.messages = &messages;
  in.add_generation_prompt = data[0] & 1;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  ctorch::lm::tmpl::Bounds b;
  b.steps = 100000;
  b.output_bytes = 1 << 20;
  b.macro_depth = 8;
  std::string a, c;
  bool ok1 = render(text, in, b, &a);
  bool ok2 = render(text, in, b, &c);
  if (ok1 != ok2 || (ok1 && a != c)) violation("two renders of one input differ", text);
  if (ok1) {
    size_t bad;
    if (a.size() > b.output_bytes) violation("output past its bound", std::to_string(a.size()));
    if (!ctorch::json::valid_utf8(a.data(), a.size(), &bad)) violation("output that is not UTF-8", text);
  }
  return 0;
}
