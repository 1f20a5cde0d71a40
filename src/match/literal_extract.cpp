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
#include <optional>
#include <utility>

#include "chars.hpp"
#include "literal_index.hpp"
#include "regex_syntax.hpp"

namespace errshim::detail {

namespace {

constexpr std::size_t kMaxWidth = std::size_t{1} << 30;  // wider counts as unbounded
constexpr int kMaxDepth = 64;  // group nesting analysed

std::size_t add_width(std::size_t a, std::size_t b) {
  if (a == kUnbounded || b == kUnbounded) return kUnbounded;
  return a + b > kMaxWidth ? kUnbounded : a + b;
}

std::size_t times_width(std::size_t w, std::size_t times) {
  if (w == 0 || times == 0) return 0;
  if (w == kUnbounded || times == kUnbounded || times > kMaxWidth / w) return kUnbounded;
  return w * times;
}

bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }

// What a part of a regex can match: the runs every match of it contains
// (offsets relative to the part's start), its widest match, and whether a
// match can contain a newline.
struct Summary {
  std::vector<RequiredRun> runs;
  std::size_t max_width = 0;
  bool newline = false;
};

// The walk over the shared regex tree. It claims only what holds for the
// constructs it knows, and gives up on the rest (flags, conditionals,
// recursion, \Q...\E, \G, \K and escapes other than \n \t \r \x and
// punctuation), so a pattern the parser reads more of is not wrongly read here.
class Analyser {
 public:
  explicit Analyser(const regex::Tree& t) : t_(t) {}

  RegexLiterals run() {
    Summary s = alternation(t_.root, 0);
    if (!ok_) return {};
    return {true, std::move(s.runs), !s.newline && !looks_ahead_};
  }

 private:
  using Node = regex::Node;
  using K = Node::Kind;

  Summary fail() {
    ok_ = false;
    return {};
  }

  // The one character a literal node stands for, if this analysis reads it.
  std::optional<char> literal_char(std::size_t i) const {
    const Node& n = t_[i];
    const std::string_view text = t_.text(i);
    if (n.quoted || n.icase) return std::nullopt;
    if (text.size() < 2 || text[0] != '\\') {
      if (text == "{") return std::nullopt;  // a '{' that opens no count: Boost's reading differs by version
      return static_cast<char>(n.value);
    }
    const char e = text[1];
    if (!is_alnum(e) || e == 'n' || e == 't' || e == 'r') return static_cast<char>(n.value);
    if (e == 'x' && text.size() > 2 && text != "\\x{}" && n.value <= 0xFF) return static_cast<char>(n.value);
    return std::nullopt;
  }

  // Whether a one-character set can match '\n'; nullopt when not analysed.
  std::optional<bool> set_newline(std::size_t i) const {
    const Node& n = t_[i];
    const std::string_view text = t_.text(i);
    if (n.icase) return std::nullopt;
    if (text == ".") return false;  // the matcher searches with match_not_dot_newline
    if (text[0] == '[') return !(n.negated && n.names_newline);  // only a negated class naming '\n' is known not to
    if (text == "\\d" || text == "\\w" || text == "\\S") return false;
    if (text == "\\s" || text == "\\D" || text == "\\W") return true;
    return std::nullopt;
  }

  // \1, \k<name> \k{name} \k'name', \g{name} \g1 \g-1 and (?P=name).
  bool understood_backref(std::size_t i) const {
    const std::string_view text = t_.text(i);
    if (text[0] == '(' || is_digit(text[1])) return true;
    std::string_view rest = text.substr(2);
    if (rest.empty()) return false;
    if (text[1] == 'k') return rest[0] == '<' || rest[0] == '{' || rest[0] == '\'';
    if (rest[0] == '{') return true;
    if (rest[0] == '-') rest.remove_prefix(1);
    return !rest.empty() && is_digit(rest[0]);
  }

  // A zero-width element: it ends a run and adds no width.
  bool assertion(std::size_t i) {
    const Node& n = t_[i];
    if (n.kind == K::comment) return true;
    if (n.kind == K::assertion) {
      if (n.value == 'G' || n.value == 'K') ok_ = false;  // the search start, a moved match start
      if (n.value == 'z' || n.value == 'Z' || n.value == '\'') looks_ahead_ = true;
      return true;
    }
    return false;
  }

  Summary alternation(std::size_t i, int depth) {
    if (depth > kMaxDepth) return fail();
    const Node& n = t_[i];
    if (n.kind != K::alt) return sequence(i, depth);
    Summary s = sequence(n.kids[0], depth);
    for (std::size_t k = 1; ok_ && k < n.kids.size(); ++k) {
      const Summary next = sequence(n.kids[k], depth);
      s.max_width = (s.max_width == kUnbounded || next.max_width == kUnbounded) ? kUnbounded
                                                                                : std::max(s.max_width, next.max_width);
      s.newline |= next.newline;
    }
    // A run is required only if every alternative has it; not worth working
    // out, so none is claimed.
    s.runs.clear();
    return s;
  }

  Summary sequence(std::size_t i, int depth) {
    const Node& n = t_[i];
    const std::size_t single[] = {i};
    const std::size_t* begin = single;
    const std::size_t* end = single + 1;
    if (n.kind == K::seq) begin = n.kids.data(), end = n.kids.data() + n.kids.size();
    Summary s;
    std::string run;
    std::size_t run_offset = 0;
    bool run_single_line = true;
    auto flush = [&] {
      if (!run.empty()) s.runs.push_back({std::move(run), run_offset, run_single_line});
      run.clear();
    };
    for (const std::size_t* k = begin; ok_ && k != end; ++k) {
      std::size_t atom = *k, min = 1, max = 1;
      if (t_[atom].kind == K::repeat) {
        if (t_[atom].long_count) return fail();
        min = t_[atom].min, max = t_[atom].max == regex::kInfinite ? kUnbounded : t_[atom].max;
        atom = t_[atom].kids[0];
        if (t_[atom].kind == K::repeat) return fail();  // a quantifier on a quantifier
      }
      const Node& a = t_[atom];
      if (a.kind == K::literal) {
        const std::optional<char> c = literal_char(atom);
        if (!c) return fail();
        if (min == 1 && max == 1) {
          if (run.empty()) {
            run_offset = s.max_width;
            run_single_line = !s.newline;
          }
          run += *c;
          s.max_width = add_width(s.max_width, 1);
          s.newline |= *c == '\n';
          continue;
        }
      }
      // Zero-width assertions end the run too: it is only conservative.
      flush();
      if (assertion(atom)) continue;
      if (a.look_around()) {
        if (a.group == Node::Group::look_ahead) looks_ahead_ = true;
        (void)alternation(a.kids[0], depth + 1);  // only for what it holds
        continue;
      }
      Summary inner = element(atom, depth);
      if (!ok_) break;
      if (min >= 1) {
        for (RequiredRun& r : inner.runs)
          s.runs.push_back(
              {std::move(r.text), add_width(s.max_width, r.max_offset), !s.newline && r.single_line_prefix});
      }
      s.max_width = add_width(s.max_width, times_width(inner.max_width, max));
      if (max != 0) s.newline |= inner.newline;
    }
    flush();
    return s;
  }

  // What a non-literal, non-assertion element matches.
  Summary element(std::size_t i, int depth) {
    const Node& n = t_[i];
    Summary s;
    switch (n.kind) {
      case K::literal:  // repeated
        s.max_width = 1;
        s.newline = n.value == '\n';
        return s;
      case K::set: {
        const std::optional<bool> newline = set_newline(i);
        if (!newline) return fail();
        s.max_width = 1;
        s.newline = *newline;
        return s;
      }
      case K::backref:
        if (!understood_backref(i)) return fail();
        s.max_width = kUnbounded;
        s.newline = true;
        return s;
      case K::group:
        if (n.flag_scope || n.group == Node::Group::conditional || n.group == Node::Group::branch_reset) return fail();
        return alternation(n.kids[0], depth + 1);
      default:  // recursion, flag settings
        return fail();
    }
  }

  const regex::Tree& t_;
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
    for (; i < text.size() && is_word_byte(text[i]); ++i)
      h = ((h << 7) | (h >> 57)) ^ static_cast<unsigned char>(text[i]);
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

RegexLiterals required_literals(std::string_view regex) {
  const regex::ParseResult parsed = regex::parse(regex);
  return parsed.tree ? Analyser(*parsed.tree).run() : RegexLiterals{};
}

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
      std::uint32_t rarest =
          patterns.size() + 1 > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<std::uint32_t>(patterns.size());
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
