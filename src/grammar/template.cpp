// Source message templates -> Boost.Regex pattern text. See template.hpp for
// the contract; the decisions the header leaves open are documented here.
//
// Compilation runs in two passes: the parser turns the template into literal
// runs and placeholders (so every syntax error carries its byte offset), then
// names are resolved over the whole template (a `{0}` may come before the
// `{}` it refers to) and the regex is emitted.
//
// Decisions beyond the header:
//  * `{N}` (Rust format!, Python str.format) names format argument N, the
//    same argument the (N+1)-th implicit `{}` fills. Each distinct positional
//    argument, implicit or explicit, is one anonymous capture, so `{0}`
//    takes its name from `anonymous_names` like `{}` does, and `{} ... {0}`
//    or `{0} ... {0}` require the same text twice. Naming `{0}` "arg0" instead
//    would capture one argument under two names and let `{} {1}` (arg1, arg1)
//    tie two different arguments together.
//  * An expression with no usable identifier (`{"-" * 10}`, `{__}`) is an
//    anonymous placeholder too: the catalog author can name it.
//  * A `%` that does not start a complete conversion is literal text
//    ("100% sure", "50%,"); in particular `%` followed by a space is always
//    literal, so Python's space flag (`% d`) is not recognised. `%(` is
//    different: it is only ever a mapping key, so an incomplete one is an error.
//  * `%d` `%i` `%u` match integers; a width pads with spaces outside the
//    capture, and `%+d` requires the sign.
//  * Rust pretty Debug (`{:#?}`) prints several lines, so inside the template
//    it may span newlines; at the end it still stops at the end of the line,
//    as nothing after it could tell the value from what follows.
//  * Python's self-documenting `{expr=}` prints the expression text itself,
//    which therefore becomes literal text before the capture.
//  * literal_length is the regex's specificity (regex_syntax.hpp): the UTF-8
//    code points of the literal text; `literals` holds only non-empty
//    runs, unescaped ({{ -> {). At least one non-blank literal character is
//    required: blanks alone would match nearly every line.
//  * Errors about `anonymous_names` or `capture_patterns` as a whole point at
//    the placeholder concerned when there is one, else at offset 0.

#include "template.hpp"

#include <algorithm>
#include <array>
#include <boost/regex.hpp>
#include <set>

#include "regex_syntax.hpp"

namespace errshim::detail {
namespace {

constexpr std::size_t npos = std::string_view::npos;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
// Python identifiers may be non-ASCII; scanning them whole lets the name check
// reject them clearly instead of silently naming the capture after a fragment.
bool is_high(char c) { return static_cast<unsigned char>(c) >= 0x80; }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool one_of(char c, std::string_view set) { return set.find(c) != npos; }

bool valid_capture_name(std::string_view name) {
  return !name.empty() && is_ident_start(name.front()) && std::all_of(name.begin(), name.end(), is_ident_char);
}

const char* const kNameRule = "capture names are [A-Za-z_][A-Za-z0-9_]*";

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string counted(std::size_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

bool is_python_keyword(std::string_view w) {
  // Keywords are never what a placeholder shows ({x if x else None}).
  static constexpr std::array<std::string_view, 35> kKeywords = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return std::find(kKeywords.begin(), kKeywords.end(), w) != kKeywords.end();
}

// Index one past the quote that closes the string literal opening at `q`,
// or npos when it is never closed.
std::size_t string_end(std::string_view s, std::size_t q) {
  for (std::size_t j = q + 1; j < s.size(); ++j) {
    if (s[j] == '\\') {
      ++j;
    } else if (s[j] == s[q]) {
      return j + 1;
    }
  }
  return npos;
}

// The capture name of an expression: its last identifier outside string
// literals, keywords skipped, surrounding underscores stripped. Empty when
// there is none (the placeholder is then anonymous).
std::string expression_name(std::string_view e) {
  std::string_view last;
  std::size_t i = 0;
  while (i < e.size()) {
    const char c = e[i];
    if (c == '\'' || c == '"') {
      const std::size_t end = string_end(e, i);
      i = end == npos ? e.size() : end;
    } else if (is_digit(c)) {
      // A number (1e5, 0x1f) must not yield the identifier "e5" or "x1f".
      while (i < e.size() && is_ident_char(e[i])) ++i;
    } else if (is_ident_start(c) || is_high(c)) {
      const std::size_t start = i;
      while (i < e.size() && (is_ident_char(e[i]) || is_high(e[i]))) ++i;
      const bool string_prefix = i < e.size() && (e[i] == '\'' || e[i] == '"');  // f"..", r'..'
      const std::string_view word = e.substr(start, i - start);
      if (!string_prefix && !is_python_keyword(word)) last = word;
    } else {
      ++i;
    }
  }
  while (!last.empty() && last.front() == '_') last.remove_prefix(1);
  while (!last.empty() && last.back() == '_') last.remove_suffix(1);
  return std::string(last);
}

enum class Source { Named, Positional, Anonymous };
enum class Shape { Line, MultiLine, Integer };
enum class Pad { None, Before, After };

struct Placeholder {
  std::size_t offset = 0;  // byte of its '{' or '%'
  Source source = Source::Anonymous;
  std::string name;  // Named: from the template; otherwise resolved later
  std::size_t argument = 0;  // Positional: the format argument it shows
  Shape shape = Shape::Line;
  Pad pad = Pad::None;  // integer width padding, kept out of the capture
  bool sign_required = false;  // %+d always prints a sign
};

struct Piece {
  bool is_placeholder = false;
  std::string literal;  // unescaped text when !is_placeholder
  Placeholder placeholder;
};

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  std::vector<Piece> parse() {
    std::size_t i = 0;
    while (i < t_.size()) {
      const char c = t_[i];
      const bool doubled = i + 1 < t_.size() && t_[i + 1] == c;
      if (c == '{') {
        if (doubled) {
          add_literal("{");
          i += 2;
        } else {
          i = brace(i);
        }
      } else if (c == '}') {
        if (!doubled) {
          fail(i, "unmatched '}' at offset " + std::to_string(i) + " (write '}}' for a literal '}')");
        }
        add_literal("}");
        i += 2;
      } else if (c == '%') {
        if (doubled) {
          add_literal("%");
          i += 2;
        } else if (const std::size_t end = percent(i); end != npos) {
          i = end;
        } else {
          add_literal("%");  // prose: "100% sure"
          ++i;
        }
      } else {
        const std::size_t end = std::min(t_.find_first_of("{}%", i), t_.size());
        add_literal(t_.substr(i, end - i));
        i = end;
      }
    }
    return std::move(pieces_);
  }

 private:
  [[noreturn]] static void fail(std::size_t at, const std::string& message) { throw template_error(at, message); }

  // A short quote of the template from `from`, for messages.
  std::string excerpt(std::size_t from, std::size_t to = npos) const {
    constexpr std::size_t kMax = 32;
    std::size_t end = std::min({to, t_.size(), from + kMax, t_.find('\n', from)});
    const bool cut = end < std::min(to, t_.size());
    while (cut && end > from && (static_cast<unsigned char>(t_[end]) & 0xC0) == 0x80) --end;
    return quoted(std::string(t_.substr(from, end - from)) + (cut ? "..." : ""));
  }

  std::string unclosed(std::size_t open) const {
    return "unclosed '{' at offset " + std::to_string(open) + " in " + excerpt(open) +
           ": no matching '}' (write '{{' for a literal '{')";
  }

  void add_literal(std::string_view text) {
    // Adjacent literal pieces ("a{{b") form one run.
    if (pieces_.empty() || pieces_.back().is_placeholder) pieces_.emplace_back();
    pieces_.back().literal.append(text);
  }

  void add_placeholder(Placeholder p) {
    Piece piece;
    piece.is_placeholder = true;
    piece.placeholder = std::move(p);
    pieces_.push_back(std::move(piece));
  }

  // Parses the brace placeholder opening at `open` ("{" not followed by "{");
  // returns the index after its closing '}'.
  std::size_t brace(std::size_t open) {
    const std::size_t n = t_.size();
    std::size_t i = open + 1;
    // The expression part: brackets and string literals may hold ':', '!'
    // and '}' that do not end it ({x["a:b"]}, {d['}']}, {f(a, b)}).
    std::vector<std::pair<char, std::size_t>> nesting;  // expected closer, opener offset
    for (; i < n; ++i) {
      const char c = t_[i];
      if (c == '\'' || c == '"') {
        const std::size_t end = string_end(t_, i);
        if (end == npos) {
          fail(i, "unterminated string literal at offset " + std::to_string(i) + " in the placeholder " +
                      excerpt(open) + " (write '{{' if that '{' is literal text)");
        }
        i = end - 1;
      } else if (c == '(' || c == '[' || c == '{') {
        nesting.emplace_back(c == '(' ? ')' : c == '[' ? ']' : '}', i);
      } else if (c == ')' || c == ']' || c == '}') {
        if (nesting.empty()) {
          if (c == '}') break;
          fail(i, "unbalanced '" + std::string(1, c) + "' at offset " + std::to_string(i) + " in the placeholder " +
                      excerpt(open, i + 1) + ": nothing opens it");
        }
        if (nesting.back().first != c) {
          const std::size_t at = nesting.back().second;
          fail(at, "unbalanced '" + std::string(1, t_[at]) + "' at offset " + std::to_string(at) +
                       " in the placeholder " + excerpt(open, i + 1) + ": '" + std::string(1, c) +
                       "' comes before its '" + std::string(1, nesting.back().first) + "'");
        }
        nesting.pop_back();
      } else if (nesting.empty() && (c == ':' || (c == '!' && !(i + 1 < n && t_[i + 1] == '=')))) {
        break;  // a format spec or a conversion (but `!=` is an operator)
      }
    }
    if (i >= n) fail(open, unclosed(open));
    const std::size_t expr_end = i;

    if (t_[i] == '!') {
      if (i + 1 >= n) fail(open, unclosed(open));
      if (one_of(t_[i + 1], "rsa")) i += 2;
      if (i >= n) fail(open, unclosed(open));
      if (t_[i] == '!' || !one_of(t_[i], ":}")) {
        fail(expr_end, "invalid conversion at offset " + std::to_string(expr_end) + " in the placeholder " +
                           excerpt(open) + ": expected !r, !s or !a before ':' or '}'");
      }
    }

    std::string_view spec;
    if (t_[i] == ':') {
      // The spec ends at the first '}', except that Python lets it hold
      // nested fields ({x:>{width}}), which are skipped, not captured.
      const std::size_t spec_begin = ++i;
      int depth = 0;
      for (; i < n; ++i) {
        if (t_[i] == '{') {
          ++depth;
        } else if (t_[i] == '}') {
          if (depth == 0) break;
          --depth;
        }
      }
      if (i >= n) fail(open, unclosed(open));
      spec = t_.substr(spec_begin, i - spec_begin);
    }
    const std::size_t close = i;

    Placeholder p;
    p.offset = open;
    if (spec.find("#?") != npos) p.shape = Shape::MultiLine;

    std::string_view expr = t_.substr(open + 1, expr_end - open - 1);
    const std::size_t last = expr.find_last_not_of(" \t\n\r\f\v");
    const std::string_view right_trimmed = last == npos ? std::string_view() : expr.substr(0, last + 1);
    // {expr=} prints "expr=" (spacing kept) before the value; `==`, `!=`,
    // `<=`, `>=` end comparisons, not self-documenting expressions.
    if (!right_trimmed.empty() && right_trimmed.back() == '=' &&
        (right_trimmed.size() < 2 || !one_of(right_trimmed[right_trimmed.size() - 2], "=!<>"))) {
      if (trim(right_trimmed.substr(0, right_trimmed.size() - 1)).empty()) {
        fail(open, "placeholder " + excerpt(open, close + 1) + " at offset " + std::to_string(open) +
                       " has no expression before its '='");
      }
      add_literal(expr);
      expr = right_trimmed.substr(0, right_trimmed.size() - 1);
    }

    const std::string_view name_text = trim(expr);
    if (expr.empty()) {
      p.source = Source::Positional;
      p.argument = implicit_++;
    } else if (name_text.empty()) {
      fail(open, "empty placeholder " + excerpt(open, close + 1) + " at offset " + std::to_string(open) +
                     ": only spaces between the braces (write '{}' for an anonymous placeholder)");
    } else if (std::all_of(name_text.begin(), name_text.end(), is_digit)) {
      if (name_text.size() > 6) {
        fail(open,
             "positional index " + std::string(name_text) + " at offset " + std::to_string(open) + " is too large");
      }
      p.source = Source::Positional;
      p.argument = std::stoul(std::string(name_text));
    } else {
      p.name = expression_name(expr);
      if (!p.name.empty()) {
        p.source = Source::Named;
        if (!valid_capture_name(p.name)) {
          fail(open, "placeholder " + excerpt(open, close + 1) + " at offset " + std::to_string(open) +
                         " gives the capture name " + quoted(p.name) + ", which is not valid (" + kNameRule + ")");
        }
      }
    }
    add_placeholder(std::move(p));
    return close + 1;
  }

  // Parses a Python %-conversion at `pct` (not "%%"); returns the index after
  // it, or npos when this '%' is literal text.
  std::size_t percent(std::size_t pct) {
    const std::size_t n = t_.size();
    std::size_t i = pct + 1;
    if (i >= n || t_[i] == ' ') return npos;

    bool has_key = false;
    std::string_view key;
    if (t_[i] == '(') {
      // Python allows parentheses inside the key as long as they balance.
      int depth = 1;
      std::size_t j = i + 1;
      for (; j < n && depth > 0; ++j) {
        if (t_[j] == '(') ++depth;
        if (t_[j] == ')') --depth;
      }
      if (depth > 0) {
        fail(pct, "unclosed '(' in the %-placeholder " + excerpt(pct) + " at offset " + std::to_string(pct) +
                      " (write '%%' for a literal '%')");
      }
      has_key = true;
      key = t_.substr(i + 1, j - i - 2);
      i = j;
    }

    bool left_align = false, plus = false, width = false;
    for (; i < n && one_of(t_[i], "#0- +"); ++i) {
      left_align |= t_[i] == '-';
      plus |= t_[i] == '+';
    }
    if (i < n && t_[i] == '*') {
      width = true;
      ++i;
    } else {
      for (; i < n && is_digit(t_[i]); ++i) width = true;
    }
    if (i < n && t_[i] == '.') {
      ++i;
      if (i < n && t_[i] == '*') {
        ++i;
      } else {
        while (i < n && is_digit(t_[i])) ++i;
      }
    }
    if (i < n && one_of(t_[i], "hlL")) ++i;  // length modifiers: accepted, ignored by Python
    if (i >= n || !one_of(t_[i], "diouxXeEfFgGcrsa")) {
      if (has_key) {
        fail(pct, "incomplete %-placeholder " + excerpt(pct, i) + " at offset " + std::to_string(pct) +
                      ": expected a conversion such as 's' or 'd' after " + quoted("%(" + std::string(key) + ")"));
      }
      return npos;
    }
    const char conversion = t_[i++];

    Placeholder p;
    p.offset = pct;
    if (has_key) {
      if (!valid_capture_name(key)) {
        fail(pct, "%-placeholder " + excerpt(pct, i) + " at offset " + std::to_string(pct) +
                      " gives the capture name " + quoted(key) + ", which is not valid (" + kNameRule + ")");
      }
      p.source = Source::Named;
      p.name = std::string(key);
    }
    if (one_of(conversion, "diu")) {
      p.shape = Shape::Integer;
      p.sign_required = plus;
      if (width) p.pad = left_align ? Pad::After : Pad::Before;
    }
    add_placeholder(std::move(p));
    return i;
  }

  std::string_view t_;
  std::vector<Piece> pieces_;
  std::size_t implicit_ = 0;  // the argument the next `{}` shows
};

// `next` is the literal run right after the placeholder, or empty (the
// template ends, or another placeholder follows). A text run followed by
// its literal is tempered: it cannot hold that literal, so it ends at the
// first place the literal starts and never backtracks past it (possessive).
// A match then costs one pass over the text from each start, where a lazy
// run retried every later occurrence of the literal (a near miss whose
// last literal is missing took time quadratic in its length or worse).
std::string default_pattern(const Placeholder& p, bool at_end, std::string_view next) {
  if (p.shape == Shape::Integer) return p.sign_required ? "[-+]\\d+" : "-?\\d+";
  if (at_end) return "[^\\n]+";
  const char* const one = p.shape == Shape::MultiLine ? "[\\s\\S]" : "[^\\n]";
  if (next.empty()) return std::string(one) + "+?";
  return "(?:(?!" + regex_escape(next) + ")" + one + ")++";
}

// Gives every unnamed placeholder its name: one anonymous capture per `%s`,
// per nameless expression and per distinct positional argument.
void resolve_names(std::vector<Piece>& pieces, const std::vector<std::string>& anonymous_names) {
  std::vector<Placeholder*> first_use;  // one per anonymous capture
  std::map<std::size_t, std::size_t> by_argument;  // positional argument -> capture
  std::vector<std::pair<Placeholder*, std::size_t>> uses;
  for (Piece& piece : pieces) {
    if (!piece.is_placeholder) continue;
    Placeholder& p = piece.placeholder;
    if (p.source == Source::Named) continue;
    std::size_t slot = first_use.size();
    if (p.source == Source::Positional) {
      const auto [it, inserted] = by_argument.emplace(p.argument, slot);
      slot = it->second;
      if (!inserted) {
        uses.emplace_back(&p, slot);
        continue;
      }
    }
    first_use.push_back(&p);
    uses.emplace_back(&p, slot);
  }

  const std::size_t have = first_use.size(), given = anonymous_names.size();
  if (given != 0 && given != have) {
    const std::size_t at = have > given ? first_use[given]->offset : have > 0 ? first_use.back()->offset : 0;
    throw template_error(at, "template has " + counted(have, "anonymous placeholder", "anonymous placeholders") +
                                 " but captures: lists " + counted(given, "name", "names"));
  }
  for (std::size_t k = 0; k < given; ++k) {
    if (!valid_capture_name(anonymous_names[k])) {
      throw template_error(first_use[k]->offset, "captures: entry " + std::to_string(k + 1) + " " +
                                                     quoted(anonymous_names[k]) + " is not a valid capture name (" +
                                                     kNameRule + ")");
    }
  }
  for (auto& [p, slot] : uses) {
    p->name = given != 0 ? anonymous_names[slot] : "arg" + std::to_string(slot + 1);
  }
}

void check_capture_patterns(const std::map<std::string, std::string>& capture_patterns,
                            const std::vector<std::string>& names) {
  for (const auto& [name, pattern] : capture_patterns) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string have;
      for (const std::string& n : names) have += (have.empty() ? "" : ", ") + n;
      throw template_error(0, "capture_patterns names " + quoted(name) + ", which this template does not capture (" +
                                  (have.empty() ? "it has no captures" : "its captures: " + have) + ")");
    }
    if (pattern.empty()) {
      throw template_error(0, "capture_patterns: the pattern for " + quoted(name) + " is empty");
    }
    // Compiled alone, an unbalanced ')' fails here instead of silently
    // closing the capture group early in the combined regex.
    try {
      boost::regex check(pattern, boost::regex::perl);
    } catch (const boost::regex_error& e) {
      throw template_error(0,
                           "capture_patterns: the pattern for " + quoted(name) + " is not a valid regex: " + e.what());
    }
  }
}

}  // namespace

std::string regex_escape(std::string_view text) {
  // Only true metacharacters are escaped: in Boost perl syntax some escaped
  // punctuation has a meaning of its own (\< \> word edges, \` \' buffer ends).
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  static const char kHex[] = "0123456789ABCDEF";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (one_of(c, "\\^$.|?*+()[]{}")) {  // never matches NUL: the set is a C string
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7F) {
      // Other control bytes, NUL included, spelled out so the pattern stays
      // printable and free of embedded NULs.
      out += "\\x{";
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
      out += '}';
    } else {
      out += c;
    }
  }
  return out;
}

CompiledTemplate compile_template(std::string_view tmpl, const std::vector<std::string>& anonymous_names,
                                  const std::map<std::string, std::string>& capture_patterns) {
  std::vector<Piece> pieces = Parser(tmpl).parse();
  resolve_names(pieces, anonymous_names);

  CompiledTemplate out;
  bool has_text = false;
  std::set<std::string> seen;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const Piece& piece = pieces[k];
    if (!piece.is_placeholder) {
      out.regex += regex_escape(piece.literal);
      out.literals.push_back(piece.literal);
      has_text |= !std::all_of(piece.literal.begin(), piece.literal.end(), is_blank);
      continue;
    }
    const Placeholder& p = piece.placeholder;
    if (p.pad == Pad::Before) out.regex += " *";
    if (seen.insert(p.name).second) {
      out.capture_names.push_back(p.name);
      const auto custom = capture_patterns.find(p.name);
      const bool at_end = k + 1 == pieces.size();
      // A tempered run that opens the template starts at a line start or
      // right after its literal: the leftmost match begins at one of those
      // anyway, and without the anchor a search would try the run again from
      // every position of a long line (quadratic in the line's length).
      if (k == 0 && custom == capture_patterns.end() && p.shape != Shape::Integer && !at_end &&
          !pieces[k + 1].is_placeholder)
        out.regex += "(?:^|(?<=" + regex_escape(pieces[k + 1].literal) + "))";
      out.regex += "(?<" + p.name + ">";
      const std::string_view next =
          !at_end && !pieces[k + 1].is_placeholder ? std::string_view(pieces[k + 1].literal) : std::string_view();
      out.regex += custom != capture_patterns.end() ? custom->second : default_pattern(p, at_end, next);
      out.regex += ")";
    } else {
      out.regex += "\\k<" + p.name + ">";  // Boost 1.74 also reads \g{name}; this is Perl's own spelling
    }
    if (p.pad == Pad::After) out.regex += " *";
  }

  if (!has_text) {
    throw template_error(0, tmpl.empty() ? "template is empty"
                                         : "template has no literal text, only placeholders "
                                           "and blanks: it would match almost any line");
  }
  check_capture_patterns(capture_patterns, out.capture_names);
  // Counted on the regex, as the matcher counts every entry: one rule for both.
  out.literal_length = regex::specificity(out.regex);
  // Without capture_patterns the regex is valid by construction (escaped
  // literals, groups with fixed bodies, \k<> after its group), so it is not
  // compiled here: the matcher compiles it on first use, which keeps loading
  // a large catalog fast. An override is author-written regex text: it can
  // be valid alone but not inside a group (an unterminated \Q, say), so the
  // whole regex is checked then.
  if (!capture_patterns.empty()) {
    try {
      boost::regex check(out.regex, boost::regex::perl);
    } catch (const boost::regex_error& e) {
      throw template_error(0, std::string("the regex built from this template does not compile: ") + e.what());
    }
  }
  return out;
}

}  // namespace errshim::detail
