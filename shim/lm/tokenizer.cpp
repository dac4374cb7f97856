// Runs a TokSpec: added tokens split out of the text, the normalizer, the
// pre-tokenizer, BPE merges (by rank or by score), the post-processor; and
// the decoder chain. Each step mirrors its namesake in Hugging Face's
// tokenizers (or llama.cpp's tokenizer for GGUF vocabularies), which the
// tests compare against.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <queue>
#include <string_view>

#include "core/internal.h"
#include "text/utf8.h"
#include "lm/tokenizer_internal.h"

namespace ctorch {
namespace lm {
namespace tok {
namespace {

struct Piece {
  std::string s;
  bool at_start;  // begins at offset 0 of the caller's text (Metaspace's "first")
};

// The pieces of s the matches cut it into, kept as `b` says (tokenizers'
// SplitDelimiterBehavior over (range, is_match) pairs, empty ranges dropped).
void split_ranges(const Piece &p, const std::vector<std::pair<size_t, size_t>> &matches, Behavior b, bool invert,
                  std::vector<Piece> &out) {
  struct R {
    size_t b, e;
    bool m;
  };
  std::vector<R> rs;
  size_t prev = 0;
  for (const auto &m : matches) {
    if (m.first > prev) rs.push_back({prev, m.first, invert});
    rs.push_back({m.first, m.second, !invert});
    prev = m.second;
  }
  if (prev < p.s.size()) rs.push_back({prev, p.s.size(), invert});
  std::vector<std::pair<size_t, size_t>> kept;
  switch (b) {
    case Behavior::Isolated:
      for (const R &r : rs) kept.emplace_back(r.b, r.e);
      break;
    case Behavior::Removed:
      for (const R &r : rs)
        if (!r.m) kept.emplace_back(r.b, r.e);
      break;
    case Behavior::MergedWithPrevious: {
      bool prev_match = false;
      for (const R &r : rs) {
        if (r.m && !prev_match && !kept.empty()) kept.back().second = r.e;
        else kept.emplace_back(r.b, r.e);
        prev_match = r.m;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool prev_match = false;  // walking backwards: whether the later range matched
      std::vector<std::pair<size_t, size_t>> rev;
      for (size_t i = rs.size(); i-- > 0;) {
        const R &r = rs[i];
        if (r.m && !prev_match && !rev.empty()) rev.back().first = r.b;
        else rev.emplace_back(r.b, r.e);
        prev_match = r.m;
      }
      kept.assign(rev.rbegin(), rev.rend());
      break;
    }
    case Behavior::Contiguous: {
      bool prev_match = false;
      for (const R &r : rs) {
        if (r.m == prev_match && !kept.empty()) kept.back().second = r.e;
        else kept.emplace_back(r.b, r.e);
        prev_match = r.m;
      }
      break;
    }
  }
  for (const auto &k : kept)
    if (k.second > k.first) out.push_back({p.s.substr(k.first, k.second - k.first), p.at_start && k.first == 0});
}

void replace_all(std::string &s, const std::string &from, const std::string &to) {
  if (from.empty()) return;
  std::string out;
  size_t i = 0;
  for (size_t j; (j = s.find(from, i)) != std::string::npos; i = j + from.size()) out.append(s, i, j - i) += to;
  out.append(s, i, std::string::npos);
  s.swap(out);
}

void regex_replace(std::string &s, const Regex &re, const std::string &to) {
  std::vector<std::pair<size_t, size_t>> m;
  re.find_all(s.data(), s.size(), m);
  if (m.empty()) return;
  std::string out;
  size_t i = 0;
  for (const auto &r : m) {
    out.append(s, i, r.first - i) += to;
    i = r.second;
  }
  out.append(s, i, std::string::npos);
  s.swap(out);
}

// Leading/trailing White_Space of s, as byte counts.
size_t ws_prefix(const std::string &s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_white_space(next_cp(s, j))) break;
    i = j;
  }
  return i;
}
size_t ws_suffix_start(const std::string &s, size_t from) {
  size_t end = s.size();
  while (end > from) {
    size_t b = end - 1;
    while (b > from && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    size_t j = b;
    if (!is_white_space(next_cp(s, j))) break;
    end = b;
  }
  return end;
}

// transformers' clean_up_tokenization, in its order.
const char *const kCleanups[][2] = {{" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
                                    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};

class Impl final : public Tokenizer {
 public:
  explicit Impl(TokSpec &&s) : t_(std::move(s)) {
    match_text_.resize(t_.added.size());
    for (size_t i = 0; i < t_.added.size(); ++i) {
      const Added &a = t_.added[i];
      match_text_[i] = a.normalized ? normalize(a.content) : a.content;
      if (!match_text_[i].empty()) by_first_[static_cast<unsigned char>(match_text_[i][0])].push_back(i);
    }
    auto longer = [&](size_t x, size_t y) { return match_text_[x].size() > match_text_[y].size(); };
    for (auto &v : by_first_) std::stable_sort(v.begin(), v.end(), longer);
    if (t_.added_longest_first) {
      for (size_t i = 0; i < t_.added.size(); ++i)
        if (!match_text_[i].empty()) by_length_.push_back(i);
      std::stable_sort(by_length_.begin(), by_length_.end(), longer);
    }
  }

  std::vector<int64_t> encode(const std::string &text, bool add_special, bool parse_special) const override {
    size_t bad = 0;
    if (!valid_utf8(text.data(), text.size(), &bad))
      throw StatusError(CTORCH_INVALID_ARGUMENT, "the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    std::vector<int64_t> ids;
    if (add_special) ids = t_.prefix;
    // Pass 1: added tokens matched on the raw text; pass 2: the normalized
    // ones, on each normalized stretch between them (tokenizers' order).
    std::vector<Seg> raw;
    split_added(text, false, parse_special, raw);
    for (const Seg &sg : raw) {
      if (sg.id >= 0) {
        ids.push_back(sg.id);
        continue;
      }
      std::string norm = normalize(text.substr(sg.b, sg.e - sg.b));
      std::vector<Seg> segs;
      split_added(norm, true, parse_special, segs);
      for (const Seg &s2 : segs) {
        if (s2.id >= 0) ids.push_back(s2.id);
        else model(Piece{norm.substr(s2.b, s2.e - s2.b), sg.b == 0 && s2.b == 0}, ids);
      }
    }
    if (add_special) ids.insert(ids.end(), t_.suffix.begin(), t_.suffix.end());
    return ids;
  }

  std::string decode(const int64_t *ids, size_t n, bool skip_special) const override {
    return decode_window(ids, n, skip_special, Before{}, nullptr);
  }

  // decode with the text cut into windows: run over the window's ids, the
  // steps give the text decode gives after the ids before it, as long as
  // those end at a cut. A cut needs every step to be separable there:
  //   - a step that works token by token (Replace, Strip, Metaspace before
  //     any step joins the tokens) always is, once the first token
  //     (Metaspace's, Strip's first_piece) lies before the cut;
  //   - ByteFallback, when the last token before the cut is not a byte;
  //   - ByteLevel and the final UTF-8 repair, when the bytes before the cut
  //     end on a complete character;
  //   - a step on the joined text (Replace, Strip with no stop), when no
  //     match of its pattern can span the cut and a Strip's start is done;
  //   - the clean-up, when no space is among the last three bytes (every
  //     pattern starts with a space and is at most four bytes long, and a
  //     replacement only takes spaces out).
  // Chains with another step after the join never cut (joined_separable).
  std::string decode_window(const int64_t *ids, size_t n, bool skip_special, const Before &before,
                            bool *cut_after) const override {
    std::vector<std::string> toks;
    toks.reserve(n);
    bool first_skipped = before.any && before.first_dropped;
    for (size_t i = 0; i < n; ++i) {
      int64_t id = ids[i];
      if (id < 0 || id >= t_.n_vocab)
        throw StatusError(CTORCH_INVALID_ARGUMENT, "id " + std::to_string(id) + " (at " + std::to_string(i) +
                                          ") is outside the vocabulary [0, " + std::to_string(t_.n_vocab) + ")");
      if (dropped(id, skip_special)) {
        first_skipped = first_skipped || (i == 0 && !before.any);
        continue;
      }
      toks.push_back(token_text(id));
    }
    const bool cont = before.any;
    bool cut = cut_after;
    std::string out;
    if (t_.dec.empty()) {
      for (size_t i = 0; i < toks.size(); ++i) out += (i || cont ? " " : "") + toks[i];
    } else {
      bool joined = false;
      for (const DecStep &d : t_.dec) {
        if (d.kind == DecStep::Strip && d.first_piece && first_skipped) continue;
        if (cut && d.kind == DecStep::ByteFallback && !joined)
          cut = !toks.empty() && byte_token_value(toks.back()) < 0;
        if (cut && joined) cut = joined_separable(d, toks[0], cont);
        // The joined text's start lies before the window.
        if (cont && joined && d.kind == DecStep::Strip) continue;
        run_decoder(d, toks, cont);
        if (d.kind == DecStep::ByteLevel) cut = cut && ends_complete(toks[0]);
        joined = joined || joins(d);
      }
      for (const auto &s : toks) out += s;
    }
    std::string text = lossy_utf8(out);
    cut = cut && ends_complete(text);
    text = cleanup(std::move(text));
    if (cut && t_.cleanup_spaces)
      cut = text.find(' ', text.size() >= 3 ? text.size() - 3 : 0) == std::string::npos;
    if (cut_after) *cut_after = cut;
    return text;
  }

  std::string token_text(int64_t id) const override {
    if (id < 0 || id >= t_.n_vocab)
      throw StatusError(CTORCH_INVALID_ARGUMENT, "id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                        std::to_string(t_.n_vocab) + ")");
    auto it = t_.added_by_id.find(id);
    if (it != t_.added_by_id.end()) return t_.added[it->second].content;
    return size_t(id) < t_.vocab.size() ? t_.vocab[id] : std::string();
  }
  int64_t n_vocab() const override { return t_.n_vocab; }
  bool is_special(int64_t id) const override {
    auto it = t_.added_by_id.find(id);
    return it != t_.added_by_id.end() && t_.added[it->second].special;
  }
  int64_t bos_id() const override { return t_.bos; }
  int64_t eos_id() const override { return t_.eos; }
  std::string bos_text() const override { return t_.bos_text; }
  std::string eos_text() const override { return t_.eos_text; }
  std::string chat_template() const override { return t_.chat_template; }
  bool dropped(int64_t id, bool skip_special) const override {
    return (skip_special && is_special(id)) || (size_t(id) < t_.unrendered.size() && t_.unrendered[id]);
  }

 private:
  // Whether step d joins the tokens into one text.
  static bool joins(const DecStep &d) { return d.kind == DecStep::ByteLevel || d.kind == DecStep::Fuse; }

  // Whether UTF-8 repaired text (lossy_utf8's) ends on a character its
  // bytes gave: one the bytes after it cannot join. (A U+FFFD may be bytes
  // still incomplete.)
  static bool ends_complete(const std::string &s) {
    return !s.empty() && !(s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0);
  }

  // Whether the joined text t (the window's, or the whole text's where
  // !cont) may be cut at its end before step d runs: never before a step
  // other than Replace, Fuse or a Strip with no stop.
  static bool joined_separable(const DecStep &d, const std::string &t, bool cont) {
    switch (d.kind) {
      case DecStep::Replace:
        // No proper prefix of the pattern ends the text (and enough of the
        // text is the window's to tell).
        if (d.a.size() > 1 && t.size() < d.a.size() - 1) return false;
        for (size_t l = 1; l < d.a.size(); ++l)
          if (t.compare(t.size() - l, l, d.a, 0, l) == 0) return false;
        return true;
      case DecStep::Strip: {
        if (d.stop > 0) return false;  // (it cuts the end of the whole text)
        if (cont) return true;
        // The start's stripping ends inside t: start copies taken, or one
        // that does not match with all its bytes present.
        size_t b = 0, k = 0;
        while (k < d.start && b + d.a.size() <= t.size() && t.compare(b, d.a.size(), d.a) == 0) b += d.a.size(), ++k;
        return k == d.start || b + d.a.size() <= t.size();
      }
      case DecStep::Fuse:
        return true;
      default:
        return false;
    }
  }

  struct Seg {
    size_t b, e;
    int64_t id;  // >= 0: an added token
  };

  // Cuts s at the added tokens of the pass (normalized or not): leftmost,
  // then longest; lstrip/rstrip take the whitespace beside a match with it;
  // single_word wants no word character on either side. Special tokens are
  // plain text unless parse_special.
  void split_added(const std::string &s, bool normalized_pass, bool parse_special, std::vector<Seg> &out) const {
    if (t_.added_longest_first) return split_longest_first(s, normalized_pass, parse_special, out);
    size_t last = 0, i = 0, n = s.size();
    while (i < n) {
      const auto &cands = by_first_[static_cast<unsigned char>(s[i])];
      const Added *hit = nullptr;
      size_t hit_len = 0;
      for (size_t k : cands) {
        const Added &a = t_.added[k];
        const std::string &m = match_text_[k];
        if (a.normalized != normalized_pass || (a.special && !parse_special)) continue;
        if (m.size() > n - i || s.compare(i, m.size(), m) != 0) continue;
        if (a.single_word && !single_word_ok(s, i, i + m.size())) continue;
        hit = &a;
        hit_len = m.size();
        break;
      }
      if (!hit) {
        ++i;
        continue;
      }
      size_t b = i, e = i + hit_len;
      if (hit->lstrip) b = std::max(last, ws_suffix_start(s.substr(0, b), last));
      if (hit->rstrip) e += ws_prefix(s.substr(e));
      if (b > last) out.push_back({last, b, -1});
      out.push_back({b, e, hit->id});
      last = i = e;
    }
    if (n > last || out.empty()) out.push_back({last, n, -1});
  }

  // llama.cpp's order (tokenizer_st_partition): each added token in turn,
  // longest first, cuts every stretch still text wherever it occurs, left to
  // right; a shorter token never splits a longer one that overlaps it, even
  // one further right. (GGUF vocabularies carry no lstrip, rstrip or
  // single_word.)
  void split_longest_first(const std::string &s, bool normalized_pass, bool parse_special,
                           std::vector<Seg> &out) const {
    bool has_byte[256] = {false};
    for (unsigned char c : s) has_byte[c] = true;
    std::vector<Seg> segs{{0, s.size(), -1}}, next;
    for (size_t k : by_length_) {
      const Added &a = t_.added[k];
      const std::string &m = match_text_[k];
      if (a.normalized != normalized_pass || (a.special && !parse_special)) continue;
      if (!has_byte[static_cast<unsigned char>(m[0])] || m.size() > s.size()) continue;
      next.clear();
      for (const Seg &g : segs) {
        size_t from = g.b;
        const std::string_view text(s.data(), g.e);
        if (g.id < 0)
          for (size_t at; (at = text.find(m, from)) != std::string_view::npos; from = at + m.size()) {
            if (at > from) next.push_back({from, at, -1});
            next.push_back({at, at + m.size(), a.id});
          }
        if (from < g.e || g.id >= 0) next.push_back({from, g.e, g.id});
      }
      segs.swap(next);
    }
    for (const Seg &g : segs)
      if (g.e > g.b) out.push_back(g);
    if (out.empty()) out.push_back({0, s.size(), -1});
  }

  static bool word_char_before(const std::string &s, size_t at) {
    if (at == 0) return false;
    size_t b = at - 1;
    while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    return is_word(s, b);
  }
  static bool is_word(const std::string &s, size_t at) {
    unsigned char c = s[at];
    if (c < 0x80) return std::isalnum(c) || c == '_';
    size_t j = at;
    return !is_white_space(next_cp(s, j));  // letters, digits and marks beyond ASCII
  }
  static bool single_word_ok(const std::string &s, size_t b, size_t e) {
    return !word_char_before(s, b) && !(e < s.size() && is_word(s, e));
  }

  std::string normalize(std::string s) const {
    for (const NormStep &n : t_.norm) {
      switch (n.kind) {
        case NormStep::Prepend:
          if (!s.empty()) s = n.a + s;
          break;
        case NormStep::Replace:
          if (n.re) regex_replace(s, *n.re, n.b);
          else replace_all(s, n.a, n.b);
          break;
        case NormStep::Strip: {
          size_t b = n.left ? ws_prefix(s) : 0;
          size_t e = n.right ? ws_suffix_start(s, b) : s.size();
          s = s.substr(b, e - b);
          break;
        }
        case NormStep::NFC:
          s = nfc(s);
          break;
      }
    }
    return s;
  }

  void pre_tokenize(std::vector<Piece> &ps) const {
    std::vector<Piece> next;
    std::vector<std::pair<size_t, size_t>> m;
    for (const PreStep &st : t_.pre) {
      next.clear();
      for (Piece &p : ps) {
        switch (st.kind) {
          case PreStep::Split:
            m.clear();
            if (st.re) {
              st.re->find_all(p.s.data(), p.s.size(), m);
            } else if (!st.literal.empty()) {
              for (size_t j = 0; (j = p.s.find(st.literal, j)) != std::string::npos; j += st.literal.size())
                m.emplace_back(j, j + st.literal.size());
            }
            split_ranges(p, m, st.behavior, st.invert, next);
            break;
          case PreStep::ByteLevel: {
            if (st.add_prefix_space && (p.s.empty() || p.s[0] != ' ')) p.s.insert(p.s.begin(), ' ');
            std::vector<Piece> parts;
            if (st.re) {
              m.clear();
              st.re->find_all(p.s.data(), p.s.size(), m);
              split_ranges(p, m, Behavior::Isolated, false, parts);
            } else {
              parts.push_back(p);
            }
            for (Piece &q : parts) {
              std::string mapped;
              mapped.reserve(q.s.size() * 2);
              for (unsigned char c : q.s) mapped += byte_char(c);
              next.push_back({std::move(mapped), q.at_start});
            }
            break;
          }
          case PreStep::Metaspace: {
            replace_all(p.s, " ", st.replacement);
            bool prepend = st.prepend == PreStep::Always || (st.prepend == PreStep::First && p.at_start);
            if (prepend && p.s.compare(0, st.replacement.size(), st.replacement) != 0) p.s = st.replacement + p.s;
            if (st.split) {
              m.clear();
              for (size_t j = 0; (j = p.s.find(st.replacement, j)) != std::string::npos; j += st.replacement.size())
                m.emplace_back(j, j + st.replacement.size());
              split_ranges(p, m, Behavior::MergedWithNext, false, next);
            } else if (!p.s.empty()) {
              next.push_back(std::move(p));
            }
            break;
          }
        }
      }
      ps.swap(next);
    }
  }

  void model(Piece p, std::vector<int64_t> &ids) const {
    if (p.s.empty()) return;
    std::vector<Piece> ps{std::move(p)};
    pre_tokenize(ps);
    for (const Piece &w : ps)
      if (t_.by_score) merge_by_score(w.s, ids);
      else merge_by_rank(w.s, ids);
  }

  // tokenizers' BPE: characters to ids (bytes where byte_fallback, the
  // unknown token otherwise), then the lowest-ranked adjacent pair merged
  // first, leftmost on ties.
  void merge_by_rank(const std::string &w, std::vector<int64_t> &out) const {
    if (t_.ignore_merges) {
      auto it = t_.ids.find(w);
      if (it != t_.ids.end()) {
        out.push_back(it->second);
        return;
      }
    }
    std::vector<int64_t> sym;
    bool prev_unk = false;
    for (size_t i = 0; i < w.size();) {
      size_t b = i;
      next_cp(w, i);
      auto it = t_.ids.find(w.substr(b, i - b));
      if (it != t_.ids.end()) {
        sym.push_back(it->second);
        prev_unk = false;
        continue;
      }
      if (t_.byte_fallback) {
        bool all = true;
        for (size_t k = b; k < i; ++k) all = all && t_.byte_ids[static_cast<unsigned char>(w[k])] >= 0;
        if (all) {
          for (size_t k = b; k < i; ++k) sym.push_back(t_.byte_ids[static_cast<unsigned char>(w[k])]);
          prev_unk = false;
          continue;
        }
      }
      if (t_.unk < 0)
        throw StatusError(CTORCH_INVALID_ARGUMENT, "the text has a character ('" + w.substr(b, i - b) +
                                          "') that the vocabulary lacks and the tokenizer has no unknown token");
      if (!(t_.fuse_unk && prev_unk)) sym.push_back(t_.unk);
      prev_unk = true;
    }
    const size_t n = sym.size();
    std::vector<int32_t> nxt(n), prv(n);
    for (size_t i = 0; i < n; ++i) nxt[i] = i + 1 < n ? int32_t(i + 1) : -1, prv[i] = int32_t(i) - 1;
    struct M {
      int32_t rank, pos, id;
      bool operator<(const M &o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<M> q;
    auto pair_of = [&](int32_t l) {
      if (l < 0 || nxt[l] < 0) return;
      auto it = t_.merges.find(uint64_t(sym[l]) << 32 | uint64_t(sym[nxt[l]]));
      if (it != t_.merges.end()) q.push({it->second.first, l, it->second.second});
    };
    for (size_t i = 0; i + 1 < n; ++i) pair_of(int32_t(i));
    while (!q.empty()) {
      M top = q.top();
      q.pop();
      int32_t r = nxt[top.pos];
      if (sym[top.pos] < 0 || r < 0) continue;
      auto it = t_.merges.find(uint64_t(sym[top.pos]) << 32 | uint64_t(sym[r]));
      if (it == t_.merges.end() || it->second.second != top.id || it->second.first != top.rank) continue;
      sym[top.pos] = top.id;
      sym[r] = -1;
      nxt[top.pos] = nxt[r];
      if (nxt[r] >= 0) prv[nxt[r]] = top.pos;
      pair_of(prv[top.pos]);
      pair_of(top.pos);
    }
    for (size_t i = 0; i < n; ++i)
      if (sym[i] >= 0) out.push_back(sym[i]);
  }

  // SentencePiece's BPE (llama.cpp's for GGUF "llama" vocabularies): the
  // adjacent pair whose concatenation is the best-scored vocabulary entry
  // merged first, leftmost on ties; what is left unknown becomes its bytes.
  void merge_by_score(const std::string &w, std::vector<int64_t> &out) const {
    struct S {
      size_t b, len;
      int32_t prev, next;
    };
    std::vector<S> sym;
    for (size_t i = 0; i < w.size();) {
      size_t b = i;
      next_cp(w, i);
      int32_t k = int32_t(sym.size());
      sym.push_back({b, i - b, k - 1, -1});
      if (k > 0) sym[k - 1].next = k;
    }
    struct B {
      float score;
      int32_t left;
      size_t len;
      bool operator<(const B &o) const { return score != o.score ? score < o.score : left > o.left; }
    };
    std::priority_queue<B> q;
    auto bigram = [&](int32_t l) {
      if (l < 0 || sym[l].next < 0) return;
      const S &a = sym[l], &c = sym[sym[l].next];
      auto it = t_.ids.find(w.substr(a.b, a.len + c.len));
      if (it != t_.ids.end()) q.push({t_.scores[it->second], l, a.len + c.len});
    };
    for (int32_t i = 0; i + 1 < int32_t(sym.size()); ++i) bigram(i);
    while (!q.empty()) {
      B top = q.top();
      q.pop();
      S &l = sym[top.left];
      if (l.len == 0 || l.next < 0) continue;
      S &r = sym[l.next];
      if (r.len == 0 || l.len + r.len != top.len) continue;
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = top.left;
      bigram(l.prev);
      bigram(top.left);
    }
    for (const S &s : sym) {
      if (s.len == 0) continue;
      auto it = t_.ids.find(w.substr(s.b, s.len));
      if (it != t_.ids.end()) {
        out.push_back(it->second);
        continue;
      }
      for (size_t k = s.b; k < s.b + s.len; ++k) {
        int64_t id = t_.byte_ids[static_cast<unsigned char>(w[k])];
        if (id < 0) id = t_.unk;
        if (id < 0)
          throw StatusError(CTORCH_INVALID_ARGUMENT, "the text has a character ('" + w.substr(s.b, s.len) +
                                            "') that the vocabulary lacks, with neither byte tokens nor an unknown token");
        out.push_back(id);
      }
    }
  }

  // cont: toks continue earlier ones (a window of StreamDecoder's), so none
  // of them is the first.
  void run_decoder(const DecStep &d, std::vector<std::string> &toks, bool cont) const {
    switch (d.kind) {
      case DecStep::ByteLevel: {
        std::string bytes;
        for (const std::string &t : toks) {
          std::string mine;
          bool all = true;
          for (size_t i = 0; i < t.size() && all;) {
            int b = byte_of_char(next_cp(t, i));
            if (b < 0) all = false;
            else mine += char(b);
          }
          bytes += all ? mine : t;  // a token outside the map stands for its own bytes
        }
        toks.assign(1, lossy_utf8(bytes));
        break;
      }
      case DecStep::Replace:
        for (std::string &t : toks) replace_all(t, d.a, d.b);
        break;
      case DecStep::ByteFallback: {
        std::vector<std::string> out;
        std::string pending;
        size_t n_pending = 0;
        auto settle = [&] {
          if (!n_pending) return;
          if (valid_utf8(pending.data(), pending.size(), nullptr)) out.push_back(pending);
          else
            for (size_t k = 0; k < n_pending; ++k) out.push_back("\xEF\xBF\xBD");
          pending.clear();
          n_pending = 0;
        };
        for (std::string &t : toks) {
          int v = byte_token_value(t);
          if (v >= 0) {
            pending += char(v);
            ++n_pending;
          } else {
            settle();
            out.push_back(std::move(t));
          }
        }
        settle();
        toks.swap(out);
        break;
      }
      case DecStep::Fuse: {
        std::string all;
        for (const auto &t : toks) all += t;
        toks.assign(1, all);
        break;
      }
      case DecStep::Strip:
        for (std::string &t : toks) {
          size_t b = 0, e = t.size();
          for (size_t k = 0; k < d.start && t.compare(b, d.a.size(), d.a) == 0 && b + d.a.size() <= e; ++k)
            b += d.a.size();
          for (size_t k = 0; k < d.stop && e >= b + d.a.size() && t.compare(e - d.a.size(), d.a.size(), d.a) == 0; ++k)
            e -= d.a.size();
          t = t.substr(b, e - b);
        }
        break;
      case DecStep::Metaspace:
        // tokenizers drops every replacement character of the first token
        // (the prefix the encoder prepended, and any other there).
        for (size_t i = 0; i < toks.size(); ++i) replace_all(toks[i], d.a, i == 0 && !cont && d.prepend ? "" : " ");
        break;
    }
  }

  // "<0xAB>" -> 0xAB; -1 for any other token.
  static int byte_token_value(const std::string &t) {
    if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
    auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    int h = hex(t[3]), l = hex(t[4]);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }

  // transformers' clean_up_tokenization.
  std::string cleanup(std::string s) const {
    if (!t_.cleanup_spaces) return s;
    for (const auto &p : kCleanups) replace_all(s, p[0], p[1]);
    return s;
  }

  TokSpec t_;
  std::vector<std::string> match_text_;      // each added token as matched (normalized where it says so)
  std::vector<size_t> by_first_[256];        // added tokens by first byte, longest first
  std::vector<size_t> by_length_;            // added tokens longest first (added_longest_first)
};

}  // namespace

namespace {

// The id of a token's text (an added token first, then the vocabulary), -1 if none.
int64_t id_of_text(const TokSpec &s, const std::string &text) {
  for (const Added &a : s.added)
    if (a.content == text) return a.id;
  auto it = s.ids.find(text);
  return it == s.ids.end() ? -1 : it->second;
}

void resolve(const TokSpec &s, const char *what, int64_t &id, std::string &text) {
  if (id < 0 && !text.empty()) {
    id = id_of_text(s, text);
    if (id < 0) fail_file(s.file, std::string("the ") + what + " token '" + text + "' is not in the vocabulary");
  } else if (id >= 0) {
    if (id >= s.n_vocab)
      fail_file(s.file, std::string("the ") + what + " id " + std::to_string(id) + " is outside the vocabulary");
    auto it = s.added_by_id.find(id);
    text = it != s.added_by_id.end() ? s.added[it->second].content : size_t(id) < s.vocab.size() ? s.vocab[id] : "";
  }
}

}  // namespace

std::shared_ptr<const Tokenizer> build(TokSpec &&s) {
  s.n_vocab = int64_t(s.vocab.size());
  for (const Added &a : s.added) s.n_vocab = std::max(s.n_vocab, a.id + 1);
  if (s.n_vocab == 0) fail_file(s.file, "the vocabulary is empty");
  if (s.by_score && s.scores.size() != s.vocab.size())
    fail_file(s.file, "the vocabulary has " + std::to_string(s.vocab.size()) + " entries but " +
                          std::to_string(s.scores.size()) + " scores");
  resolve(s, "BOS", s.bos, s.bos_text);
  resolve(s, "EOS", s.eos, s.eos_text);
  if (s.add_bos) {
    if (s.bos < 0) fail_file(s.file, "a BOS token is to be added but the tokenizer names none");
    s.prefix.insert(s.prefix.begin(), s.bos);
  }
  if (s.add_eos) {
    if (s.eos < 0) fail_file(s.file, "an EOS token is to be added but the tokenizer names none");
    s.suffix.push_back(s.eos);
  }
  for (const auto *v : {&s.prefix, &s.suffix})
    for (int64_t id : *v)
      if (id >= s.n_vocab)
        fail_file(s.file, "the post-processor adds id " + std::to_string(id) + ", outside the vocabulary");
  return std::make_shared<Impl>(std::move(s));
}

}  // namespace tok

StreamDecoder::StreamDecoder(std::shared_ptr<const Tokenizer> tok, bool skip_special)
    : tok_(std::move(tok)), skip_special_(skip_special) {}

std::string StreamDecoder::push(int64_t id) {
  if (id < 0 || id >= tok_->n_vocab())
    throw StatusError(CTORCH_INVALID_ARGUMENT, "id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                                   std::to_string(tok_->n_vocab()) + ")");
  if (ids_.empty() && !before_.any) before_.first_dropped = tok_->dropped(id, skip_special_);
  ids_.push_back(id);
  // The window's text is handed out where it ends at a cut: no later id can
  // change it there, so the pieces add up to one decode of all the ids
  // whatever the decoders do across tokens, and the next id starts a new
  // window (a push costs the window's length, not the stream's). Until
  // then it waits: a character incomplete, a byte run open, a clean-up
  // pattern begun, or a decoder chain that never cuts (flush hands it out).
  bool cut = false;
  std::string text = tok_->decode_window(ids_.data(), ids_.size(), skip_special_, before_, &cut);
  if (!cut) return std::string();
  before_.any = true;
  ids_.clear();
  return text;
}

std::string StreamDecoder::flush() {
  std::string text = tok_->decode_window(ids_.data(), ids_.size(), skip_special_, before_, nullptr);
  ids_.clear();
  before_ = Tokenizer::Before{};
  return text;
}

}  // namespace lm
}  // namespace ctorch
