// Required literals of a regex, and the catalog-wide choice of one per entry.
//
// The analyser reads the subset of Boost's perl syntax that catalogs use
// (everything template.cpp emits, and common hand-written patterns) and
// gives up on anything else, so what it reports is always true: a wrong
// "required" literal would hide a match. Giving up only costs speed (the
// entry is then checked on every message).

#include "literal_extract.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "literal_index.hpp"

namespace errshim::detail {

namespace {

constexpr std::size_t kMaxWidth = std::size_t{1} << 30;  // wider counts as unbounded
constexpr int kMaxDepth = 64;                             // group nesting analysed

std::size_t add_width(std::size_t a, std::size_t b) {
  if (a == kUnbounded || b == kUnbounded) return kUnbounded;
  return a + b > kMaxWidth ? kUnbounded : a + b;
}

std::size_t times_width(std::size_t w, std::size_t times) {
  if (w == 0 || times == 0) return 0;
  if (w == kUnbounded || times == kUnbounded || times > kMaxWidth / w) return kUnbounded;
  return w * times;
}

bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// What a part of a regex can match: the runs every match of it contains
// (offsets relative to the part's start), its widest match, and whether a
// match can contain a newline.
struct Summary {
  std::vector<RequiredRun> runs;
  std::size_t max_width = 0;
  bool newline = false;
};

class Analyser {
 public:
  explicit Analyser(std::string_view re) : re_(re) {}

  RegexLiterals run() {
    Summary s = alternation(0);
    if (!ok_ || i_ != re_.size()) return {};
    return {true, std::move(s.runs), !s.newline && !looks_ahead_};
  }

 private:
  enum class Kind { literal, assertion, other };
  struct Atom {
    Kind kind = Kind::other;
    char c = 0;     // literal
    Summary inner;  // other
  };

  Atom fail() {
    ok_ = false;
    return {};
  }
  static Atom literal(char c) {
    Atom a;
    a.kind = Kind::literal;
    a.c = c;
    a.inner.max_width = 1;
    a.inner.newline = c == '\n';
    return a;
  }
  static Atom assertion() {
    Atom a;
    a.kind = Kind::assertion;
    return a;
  }
  static Atom one_char(bool newline) {
    Atom a;
    a.inner.max_width = 1;
    a.inner.newline = newline;
    return a;
  }
  static Atom backreference() {
    Atom a;
    a.inner.max_width = kUnbounded;
    a.inner.newline = true;
    return a;
  }

  bool at(char c) const { return i_ < re_.size() && re_[i_] == c; }

  // Skips to just past `close`; false when it never comes.
  bool skip_past(char close) {
    const std::size_t j = re_.find(close, i_);
    if (j == std::string_view::npos) return false;
    i_ = j + 1;
    return true;
  }

  Summary alternation(int depth) {
    if (depth > kMaxDepth) {
      ok_ = false;
      return {};
    }
    Summary s = sequence(depth);
    bool alternatives = false;
    while (ok_ && at('|')) {
      ++i_;
      alternatives = true;
      const Summary next = sequence(depth);
      s.max_width = (s.max_width == kUnbounded || next.max_width == kUnbounded) ? kUnbounded
                                                                                : std::max(s.max_width, next.max_width);
      s.newline |= next.newline;
    }
    // A run is required only if every alternative has it; not worth working
    // out, so none is claimed.
    if (alternatives) s.runs.clear();
    return s;
  }

  Summary sequence(int depth) {
    Summary s;
    std::string run;
    std::size_t run_offset = 0;
    bool run_single_line = true;
    auto flush = [&] {
      if (!run.empty()) s.runs.push_back({std::move(run), run_offset, run_single_line});
      run.clear();
    };
    while (ok_ && i_ < re_.size() && re_[i_] != '|' && re_[i_] != ')') {
      Atom a = atom(depth);
      if (!ok_) break;
      const auto [min, max] = quantifier();
      if (!ok_) break;
      if (a.kind == Kind::literal && min == 1 && max == 1) {
        if (run.empty()) {
          run_offset = s.max_width;
          run_single_line = !s.newline;
        }
        run += a.c;
        s.max_width = add_width(s.max_width, 1);
        s.newline |= a.c == '\n';
        continue;
      }
      // Zero-width assertions end the run too: it is only conservative.
      flush();
      if (a.kind == Kind::assertion) continue;
      if (min >= 1) {
        for (RequiredRun& r : a.inner.runs)
          s.runs.push_back({std::move(r.text), add_width(s.max_width, r.max_offset), !s.newline && r.single_line_prefix});
      }
      s.max_width = add_width(s.max_width, times_width(a.inner.max_width, max));
      if (max != 0) s.newline |= a.inner.newline;
    }
    flush();
    return s;
  }

  // {min, max} of the quantifier at i_ ({1, 1} when there is none).
  std::pair<std::size_t, std::size_t> quantifier() {
    if (i_ >= re_.size()) return {1, 1};
    std::pair<std::size_t, std::size_t> q;
    switch (re_[i_]) {
      case '*': q = {0, kUnbounded}; ++i_; break;
      case '+': q = {1, kUnbounded}; ++i_; break;
      case '?': q = {0, 1}; ++i_; break;
      case '{': {
        ++i_;
        auto number = [&](std::size_t& out) {
          const std::size_t from = i_;
          out = 0;
          while (i_ < re_.size() && re_[i_] >= '0' && re_[i_] <= '9' && i_ - from < 6)
            out = out * 10 + static_cast<std::size_t>(re_[i_++] - '0');
          return i_ > from;
        };
        if (!number(q.first)) {
          ok_ = false;
          return {1, 1};
        }
        q.second = q.first;
        if (at(',')) {
          ++i_;
          if (!number(q.second)) q.second = kUnbounded;
        }
        if (!at('}')) {
          ok_ = false;
          return {1, 1};
        }
        ++i_;
        break;
      }
      default: return {1, 1};
    }
    if (at('?') || at('+')) ++i_;  // lazy or possessive: same text can match
    return q;
  }

  Atom atom(int depth) {
    const char c = re_[i_];
    switch (c) {
      case '(': return group(depth);
      case '[': return char_class();
      case '.': ++i_; return one_char(false);  // the matcher searches with match_not_dot_newline
      case '^':
      case '$': ++i_; return assertion();
      case '\\': return escape();
      case '*':
      case '+':
      case '?':
      case '{': return fail();
      default: ++i_; return literal(c);
    }
  }

  Atom escape() {
    ++i_;
    if (i_ >= re_.size()) return fail();
    const char e = re_[i_++];
    if (!is_alnum(e)) {
      // Boost reads \< \> as word edges and \` \' as buffer ends.
      if (e == '\'') looks_ahead_ = true;
      if (e == '<' || e == '>' || e == '`' || e == '\'') return assertion();
      return literal(e);
    }
    switch (e) {
      case 'n': return literal('\n');
      case 't': return literal('\t');
      case 'r': return literal('\r');
      case 'x': {
        int value = 0, digits = 0;
        if (at('{')) {
          ++i_;
          for (; i_ < re_.size() && hex_value(re_[i_]) >= 0 && digits < 8; ++i_, ++digits) value = value * 16 + hex_value(re_[i_]);
          if (!at('}')) return fail();
          ++i_;
        } else {
          for (; i_ < re_.size() && hex_value(re_[i_]) >= 0 && digits < 2; ++i_, ++digits) value = value * 16 + hex_value(re_[i_]);
        }
        if (digits == 0 || value > 0xFF) return fail();
        return literal(static_cast<char>(value));
      }
      case 'd':
      case 'w':
      case 'S': return one_char(false);
      case 's':
      case 'D':
      case 'W': return one_char(true);
      case 'b':
      case 'B':
      case 'A': return assertion();
      case 'z':
      case 'Z': looks_ahead_ = true; return assertion();
      case 'k':  // \k<name> \k{name} \k'name'
        if (at('<')) return skip_past('>') ? backreference() : fail();
        if (at('{')) return skip_past('}') ? backreference() : fail();
        if (at('\'')) {
          ++i_;
          return skip_past('\'') ? backreference() : fail();
        }
        return fail();
      case 'g':  // \g{name} \g{-1} \g1 \g-1
        if (at('{')) return skip_past('}') ? backreference() : fail();
        if (at('-')) ++i_;
        if (i_ >= re_.size() || re_[i_] < '0' || re_[i_] > '9') return fail();
        while (i_ < re_.size() && re_[i_] >= '0' && re_[i_] <= '9') ++i_;
        return backreference();
      default:
        if (e >= '1' && e <= '9') {
          while (i_ < re_.size() && re_[i_] >= '0' && re_[i_] <= '9') ++i_;
          return backreference();
        }
        // \G depends on where the search starts, \K moves the match start,
        // \Q, \p, \h, \v, \e, \c, \0, ...: not analysed.
        return fail();
    }
  }

  Atom char_class() {
    std::size_t j = i_ + 1;
    const std::size_t n = re_.size();
    bool negated = false, newline = false;
    if (j < n && re_[j] == '^') negated = true, ++j;
    if (j < n && re_[j] == ']') ++j;  // a leading ']' is a member
    while (j < n && re_[j] != ']') {
      if (re_[j] == '\\') {
        if (j + 1 < n && re_[j + 1] == 'n') newline = true;
        j += 2;
      } else if (re_[j] == '[' && j + 1 < n && (re_[j + 1] == ':' || re_[j + 1] == '=' || re_[j + 1] == '.')) {
        const char close[] = {re_[j + 1], ']', '\0'};
        const std::size_t end = re_.find(close, j + 2);
        if (end == std::string_view::npos) return fail();
        j = end + 2;
      } else {
        newline |= re_[j] == '\n';
        ++j;
      }
    }
    if (j >= n) return fail();
    i_ = j + 1;
    // Only a negated class that names '\n' is known never to match it.
    return one_char(!(negated && newline));
  }

  Atom group(int depth) {
    ++i_;
    bool look_around = false;
    if (at('*')) return fail();  // (*VERB)
    if (at('?')) {
      ++i_;
      if (i_ >= re_.size()) return fail();
      const char t = re_[i_];
      const char next = i_ + 1 < re_.size() ? re_[i_ + 1] : '\0';
      if (t == ':' || t == '>') {
        ++i_;
      } else if (t == '=' || t == '!') {
        ++i_;
        look_around = true;
        looks_ahead_ = true;
      } else if (t == '<' && (next == '=' || next == '!')) {
        i_ += 2;
        look_around = true;
      } else if (t == '<') {
        if (!skip_past('>')) return fail();
      } else if (t == 'P' && next == '<') {
        if (!skip_past('>')) return fail();
      } else if (t == 'P' && next == '=') {
        return skip_past(')') ? backreference() : fail();
      } else if (t == '\'') {
        ++i_;
        if (!skip_past('\'')) return fail();
      } else if (t == '#') {
        return skip_past(')') ? assertion() : fail();
      } else {
        return fail();  // flags, conditionals, recursion, branch reset
      }
    }
    Summary inner = alternation(depth + 1);
    if (!ok_ || !at(')')) return fail();
    ++i_;
    if (look_around) return assertion();
    Atom a;
    a.inner = std::move(inner);
    return a;
  }

  std::string_view re_;
  std::size_t i_ = 0;
  bool ok_ = true;
  bool looks_ahead_ = false;  // a look-ahead or an end-of-buffer assertion
};

// ----------------------------------------------------------------- key choice

// Counts of 64-bit hashes (open addressing, grows). A collision only makes
// a word look commoner than it is, which costs a little speed, never a match.
class HashCounts {
 public:
  HashCounts() : keys_(1u << 12, 0), counts_(1u << 12, 0) {}

  void add(std::uint64_t h) {
    if (2 * (used_ + 1) > keys_.size()) grow();
    std::uint32_t& c = counts_[slot(h | 1)];
    if (c == 0) ++used_;
    ++c;
  }
  std::uint32_t get(std::uint64_t h) const {
    const std::size_t mask = keys_.size() - 1;
    for (std::size_t s = (h | 1) >> shift_; keys_[s] != 0; s = (s + 1) & mask)
      if (keys_[s] == (h | 1)) return counts_[s];
    return 0;
  }

 private:
  std::size_t slot(std::uint64_t key) {  // key != 0
    const std::size_t mask = keys_.size() - 1;
    std::size_t s = key >> shift_;
    while (keys_[s] != 0 && keys_[s] != key) s = (s + 1) & mask;
    keys_[s] = key;
    return s;
  }
  void grow() {
    std::vector<std::uint64_t> keys(keys_.size() * 2, 0);
    std::vector<std::uint32_t> counts(keys.size(), 0);
    keys.swap(keys_);
    counts.swap(counts_);
    --shift_;
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != 0) counts_[slot(keys[i])] = counts[i];
  }

  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> counts_;
  std::size_t used_ = 0;
  unsigned shift_ = 64 - 12;
};

bool is_word_byte(char c) { return is_alnum(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }

std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}

// Hashes of a run's words and adjacent word pairs ("grams"), sorted and
// distinct; `words` receives the distinct words alone.
void grams_of(std::string_view text, std::vector<std::uint64_t>& grams, std::vector<std::uint64_t>& words) {
  std::uint64_t previous = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_word_byte(text[i])) {
      ++i;
      continue;
    }
    // Rotate-xor per byte (no multiply chain), mixed once at the end: a
    // collision only makes a word look commoner, never hides a match.
    std::uint64_t h = 0;
    for (; i < text.size() && is_word_byte(text[i]); ++i) h = ((h << 7) | (h >> 57)) ^ static_cast<unsigned char>(text[i]);
    h = mix(h + 0x9E3779B97F4A7C15ull);
    words.push_back(h);
    grams.push_back(h);
    if (previous != 0) grams.push_back(mix(previous * 31 + h));
    previous = h;
  }
  for (std::vector<std::uint64_t>* v : {&grams, &words}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
}

constexpr unsigned kGramCountBits = 20;

std::size_t gram_slot(std::uint64_t gram) {
  return static_cast<std::size_t>(((gram ^ (gram >> 29)) * 0x9E3779B97F4A7C15ull) >> (64 - kGramCountBits));
}

void count_windows(std::string_view text, std::size_t width, std::vector<std::uint16_t>& counts) {
  for (std::size_t i = 0; i + width <= text.size(); ++i) {
    std::uint16_t& c = counts[gram_slot(LiteralIndex::load_gram(text.data() + i, width))];
    if (c != 0xFFFF) ++c;
  }
}

}  // namespace

RegexLiterals required_literals(std::string_view regex) { return Analyser(regex).run(); }

std::uint32_t KeyChoice::gram_weight(const char* p, std::size_t width) const noexcept {
  const std::vector<std::uint16_t>& counts = width == 8 ? counts8 : counts4;
  return counts.empty() ? 0 : counts[gram_slot(LiteralIndex::load_gram(p, width))];
}

KeyChoice choose_keys(const std::vector<RegexLiterals>& patterns) {
  KeyChoice out;
  out.keys.resize(patterns.size());

  // Document frequency of words and word pairs: in how many entries'
  // literals each occurs.
  HashCounts df;
  std::vector<std::uint64_t> grams, words, entry_grams;
  for (const RegexLiterals& p : patterns) {
    entry_grams.clear();
    for (const RequiredRun& r : p.runs) {
      grams.clear();
      words.clear();
      grams_of(r.text, grams, words);
      entry_grams.insert(entry_grams.end(), grams.begin(), grams.end());
    }
    std::sort(entry_grams.begin(), entry_grams.end());
    entry_grams.erase(std::unique(entry_grams.begin(), entry_grams.end()), entry_grams.end());
    for (std::uint64_t g : entry_grams) df.add(g);
  }

  // How likely a run is to occur in a message, log2, as the largest of
  // three estimates. (a) Its words taken as independent, p(word) =
  // df / entries: many and rare words make a run rare. (b) Its rarest word
  // or word pair: entries that share a whole phrase ("Expected all tensors
  // to be on the same device") all become candidates on each such message,
  // however unlikely the phrase's words look alone. (c) Chance: about
  // 2^(-length/2) for text near an error, whose log lines use the catalog's
  // vocabulary: " for num_heads" is rare in a catalog, not in a log.
  const double entries = static_cast<double>(patterns.size()) + 1.0;
  out.counts4.assign(std::size_t{1} << kGramCountBits, 0);
  out.counts8.assign(std::size_t{1} << kGramCountBits, 0);
  for (std::size_t e = 0; e < patterns.size(); ++e) {
    const RequiredRun* best = nullptr;
    const RequiredRun* second = nullptr;
    std::pair<double, std::size_t> best_score{}, second_score{};
    for (const RequiredRun& r : patterns[e].runs) {
      if (r.text.size() < 3) continue;
      grams.clear();
      words.clear();
      grams_of(r.text, grams, words);
      double p = 1;  // a run without words is least preferred
      for (std::uint64_t w : words) p *= (static_cast<double>(df.get(w)) + 1.0) / entries;
      const double independent = std::log2(std::max(p, 1e-300));
      std::uint32_t rarest = patterns.size() + 1 > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<std::uint32_t>(patterns.size());
      for (std::uint64_t g : grams) rarest = std::min(rarest, df.get(g));
      const double shared = std::log2((static_cast<double>(rarest) + 1.0) / entries);
      // Ties: longer (11+ bytes use the index's fast lane).
      const double chance = -static_cast<double>(r.text.size()) / 2;
      const std::pair<double, std::size_t> score{std::max({independent, shared, chance}), ~r.text.size()};
      if (r.text.size() >= LiteralIndex::kMinKey && (!best || score < best_score)) {
        if (best) second = best, second_score = best_score;
        best = &r, best_score = score;
      } else if (!second || score < second_score) {
        second = &r, second_score = score;
      }
    }
    if (!best) continue;
    out.keys[e] = {best->text, best->max_offset, best->single_line_prefix, patterns[e].line_local,
                   second && second->text != best->text ? second->text : std::string()};
    // Windows of the chosen literals, at the width the index anchors them
    // with: a window many keys share makes a large bucket to verify.
    for (const RequiredRun* r : {best, second}) {
      if (r == nullptr || (r == second && out.keys[e].also.empty())) continue;
      if (r->text.size() >= LiteralIndex::kMainLaneKey)
        count_windows(r->text, 8, out.counts8);
      else
        count_windows(r->text, 4, out.counts4);
    }
  }
  return out;
}

}  // namespace errshim::detail
