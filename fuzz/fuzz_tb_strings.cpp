// Harness: bytes as the strings of TensorBoard records (shim/logging). The
// first byte chooses the entry point; the rest is split at NUL bytes into
// the strings it takes (tag, text, hyper-parameter names, text values,
// metric names, run name, file-name suffix). Each call writes into a fresh
// writer in a scratch folder, emptied after every input. Properties beyond
// fuzz_util.h's status contract, against a UTF-8 check written here
// independently of text/utf8.h (Unicode's table of well-formed byte
// sequences, not a decoder):
//   - a call that returns OK had only well-formed UTF-8 strings (what
//     TensorBoard's reader can read);
//   - a call with well-formed strings is never refused for its UTF-8.
#include "fuzz_util.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

// Unicode 15, table 3-7: the well-formed UTF-8 byte sequences.
bool well_formed(const std::string &s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  size_t n = s.size(), i = 0;
  auto in = [&](size_t k, unsigned lo, unsigned hi) { return i + k < n && p[i + k] >= lo && p[i + k] <= hi; };
  while (i < n) {
    unsigned c = p[i];
    size_t len;
    if (c <= 0x7F) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = in(1, 0x80, 0xBF) ? 2 : 0;
    else if (c == 0xE0) len = in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    else if (c == 0xED) len = in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
    else if (c == 0xF0) len = in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    else if (c >= 0xF1 && c <= 0xF3) len = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    else if (c == 0xF4) len = in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    else len = 0;
    if (!len) return false;
    i += len;
  }
  return true;
}

const std::string &scratch() {
  // Never destroyed: the atexit handler below runs after static destructors
  // registered later would have run.
  static const std::string &d = *[] {
    const char *t = std::getenv("TMPDIR");
    auto *p = new std::string(std::string(t && *t ? t : "/tmp") + "/ctorch-fuzz-tb-" + std::to_string(getpid()));
    mkdir(p->c_str(), 0700);
    std::atexit([] { rmdir(scratch().c_str()); });  // emptied after every input
    return p;
  }();
  return d;
}

int remove_one(const char *path, const struct stat *, int, struct FTW *ftw) {
  if (ftw->level > 0) std::remove(path);
  return 0;
}

struct Fixture {
  ctorch_tensor values = nullptr, image = nullptr;
  Fixture() {
    const int64_t n = 4, chw[3] = {3, 2, 2};
    FZ(ctorch_ones(&values, &n, 1, nullptr, nullptr, nullptr, nullptr));
    FZ(ctorch_zeros(&image, chw, 3, nullptr, nullptr, nullptr, nullptr));
  }
  // Made and freed per input, not kept in a static: a tensor handle is not
  // a pointer, so LeakSanitizer (libFuzzer's leak check, and the replay's at
  // exit) counts a tensor whose handle is live as leaked (ctorch.h, "Handle
  // checks").
  ~Fixture() {
    ctorch_tensor_free(values);
    ctorch_tensor_free(image);
  }
};

// Checks a call's outcome against its strings' well-formedness.
void judge(ctorch_status st, const char *call, const std::vector<const std::string *> &strings) {
  bool ok = true;
  for (const auto *s : strings) ok = ok && well_formed(*s);
  if (st == CTORCH_OK && !ok) fz::violation("a string that is not UTF-8 was written", call, st);
  // A refusal *as bad UTF-8* is INVALID_ARGUMENT saying "is not valid UTF-8";
  // other failures of good strings are fine (a long filename_suffix is an IO
  // error, "File name too long", and its text may itself contain "UTF-8").
  if (st == CTORCH_INVALID_ARGUMENT && ok && std::strstr(ctorch_last_error(), "is not valid UTF-8"))
    fz::violation("well-formed UTF-8 refused", call, st);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  Fixture fx;
  const unsigned op = data[0] % 7;
  std::vector<std::string> s;
  std::string cur;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0) s.push_back(cur), cur.clear();
    else cur += static_cast<char>(data[i]);
  }
  s.push_back(cur);
  while (s.size() < 6) s.push_back("x");
  ctorch_summary_writer w = nullptr;
  const bool suffix_op = op == 6;
  ctorch_status st = FZ(ctorch_summary_writer_new(&w, scratch().c_str(), suffix_op ? s[0].c_str() : nullptr));
  if (suffix_op) judge(st, "ctorch_summary_writer_new", {&s[0]});
  if (st == CTORCH_OK) {
    switch (op) {
      case 0:
        judge(FZ(ctorch_summary_writer_add_scalar(w, s[0].c_str(), 1.5, 1, 10)), "add_scalar", {&s[0]});
        break;
      case 1:
        judge(FZ(ctorch_summary_writer_add_histogram(w, s[0].c_str(), fx.values, 1, 10)), "add_histogram", {&s[0]});
        break;
      case 2:
        judge(FZ(ctorch_summary_writer_add_image(w, s[0].c_str(), fx.image, 1, 10)), "add_image", {&s[0]});
        break;
      case 3:
        judge(FZ(ctorch_summary_writer_add_text(w, s[0].c_str(), s[1].c_str(), 1, 10)), "add_text", {&s[0], &s[1]});
        break;
      case 4:
      case 5: {
        // names s[0], s[1]; s[1]'s value is the text s[2]; metric s[3]; run s[4] (op 5) or a fixed one.
        const char *names[2] = {s[0].c_str(), s[1].c_str()}, *texts[2] = {nullptr, s[2].c_str()};
        const char *metrics[1] = {s[3].c_str()};
        const double values[2] = {0.5, 0}, mv[1] = {0.25};
        static const std::string fixed_run = "run";
        const std::string &run = op == 5 ? s[4] : fixed_run;
        judge(FZ(ctorch_summary_writer_add_hparams(w, names, values, texts, 2, metrics, mv, 1, run.c_str())),
              "add_hparams", {&s[0], &s[1], &s[2], &s[3], &run});
        break;
      }
      default:
        break;
    }
  }
  ctorch_summary_writer_free(w);
  nftw(scratch().c_str(), remove_one, 8, FTW_DEPTH | FTW_PHYS);
  return 0;
}
