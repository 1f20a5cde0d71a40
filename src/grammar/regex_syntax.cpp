// Recursive descent over Boost's perl syntax. The parser accepts what Boost
// accepts in the forms catalogs use and records how each node was written
// (its span, \Q quoting, a class naming '\n', ...), because the analyses
// differ in what they claim about a construct: the literal analysis gives
// up on flags and many escapes, the risk analysis reads them all.

#include "regex_syntax.hpp"

#include <algorithm>
#include <utility>

#include "chars.hpp"

namespace errshim::detail::regex {
namespace {

ByteSet range(unsigned lo, unsigned hi) {
  ByteSet s;
  for (unsigned c = lo; c <= hi && c < 256; ++c) s.set(c);
  return s;
}
ByteSet one(unsigned char c) { return ByteSet().set(c); }
ByteSet digit() { return range('0', '9'); }
ByteSet word() { return range('a', 'z') | range('A', 'Z') | digit() | one('_'); }
ByteSet space() { return one(' ') | range('\t', '\r'); }
ByteSet horizontal() { return one(' ') | one('\t'); }
ByteSet vertical() { return range('\n', '\r'); }
ByteSet any_but_newline() { return ~one('\n'); }

ByteSet fold_case(ByteSet s) {
  for (unsigned c = 'a'; c <= 'z'; ++c) {
    const unsigned u = c - 'a' + 'A';
    if (s[c] || s[u]) s.set(c).set(u);
  }
  return s;
}

int hex(char h) {
  if (is_digit(h)) return h - '0';
  if (h >= 'a' && h <= 'f') return h - 'a' + 10;
  if (h >= 'A' && h <= 'F') return h - 'A' + 10;
  return -1;
}

struct Failure {
  std::size_t offset;
  const char* message;
};

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  Tree parse() {
    Tree t;
    t.pattern = p_;
    t.root = alternation(0);
    if (i_ != p_.size()) fail(i_, "unbalanced ')': no group is open here");
    t.nodes = std::move(nodes_);
    return t;
  }

 private:
  struct Flags {
    bool icase = false;
    bool extended = false;
  };

  [[noreturn]] void fail(std::size_t at, const char* message) const { throw Failure{at, message}; }

  std::size_t push(Node n) {
    nodes_.push_back(std::move(n));
    return nodes_.size() - 1;
  }
  Node make(Node::Kind kind, std::size_t begin) const {
    Node n;
    n.kind = kind;
    n.begin = begin;
    n.end = i_;
    return n;
  }
  std::size_t leaf(Node::Kind kind, std::size_t begin, std::uint32_t value = 0) {
    Node n = make(kind, begin);
    n.value = value;
    return push(std::move(n));
  }
  std::size_t literal(std::uint32_t value, std::size_t begin, bool raw) {
    Node n = make(Node::Kind::literal, begin);
    n.value = value;
    n.icase = flags_.icase;
    n.starts_char = !(raw && (value & 0xC0) == 0x80);
    n.set = fold(one(static_cast<unsigned char>(member_byte(value))));
    return push(std::move(n));
  }
  std::size_t set(ByteSet s, std::size_t begin) {
    Node n = make(Node::Kind::set, begin);
    n.icase = flags_.icase;
    n.set = fold(s);
    return push(std::move(n));
  }

  ByteSet fold(ByteSet s) const { return flags_.icase ? fold_case(s) : s; }

  bool at_end() const { return i_ >= p_.size(); }
  char peek(std::size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : '\0'; }
  char next() { return p_[i_++]; }  // a character the caller has already seen
  char take(const char* what) {
    if (at_end()) fail(i_, what);
    return p_[i_++];
  }

  // In (?x) mode white space and #-comments between atoms are not pattern.
  void skip_extended() {
    while (flags_.extended && !at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::size_t alternation(int depth) {
    if (depth > kMaxDepth) fail(i_, "groups nest too deeply");
    const std::size_t begin = i_;
    Node alt;
    alt.kind = Node::Kind::alt;
    alt.kids.push_back(sequence(depth));
    while (peek() == '|' && !at_end()) {
      ++i_;
      alt.kids.push_back(sequence(depth));
    }
    if (alt.kids.size() == 1) return alt.kids.front();
    alt.begin = begin;
    alt.end = i_;
    return push(std::move(alt));
  }

  std::size_t sequence(int depth) {
    Node seq;
    seq.kind = Node::Kind::seq;
    seq.begin = i_;
    for (;;) {
      skip_extended();
      if (at_end() || peek() == '|' || peek() == ')') break;
      if (peek() == '\\' && peek(1) == 'Q') {  // \Q...\E: literal text
        i_ += 2;
        while (!at_end() && !(peek() == '\\' && peek(1) == 'E')) {
          const std::size_t b = i_++;
          Node n = make(Node::Kind::literal, b);
          n.value = static_cast<unsigned char>(p_[b]);
          n.icase = flags_.icase;
          n.starts_char = (n.value & 0xC0) != 0x80;
          n.quoted = true;
          n.set = fold(one(static_cast<unsigned char>(n.value)));
          seq.kids.push_back(push(std::move(n)));
        }
        if (!at_end()) i_ += 2;
        // Quoted '+' or '*' are text; a quantifier after \E applies to the
        // last quoted character.
        if (!seq.kids.empty()) seq.kids.back() = quantified(seq.kids.back());
        continue;
      }
      const std::size_t a = atom(depth);
      const Node::Kind k = nodes_[a].kind;
      if (k != Node::Kind::comment && k != Node::Kind::set_flags) {
        seq.kids.push_back(quantified(a));
        continue;
      }
      seq.kids.push_back(a);
      // Boost applies such a quantifier to the atom before the comment or
      // flag setting; not read here.
      skip_extended();
      if (peek() == '*' || peek() == '+' || peek() == '?')
        fail(i_, "a quantifier after a comment or a flag setting (quantify the atom directly)");
    }
    seq.end = i_;
    if (seq.kids.size() == 1) return seq.kids.front();
    return push(std::move(seq));
  }

  // Wraps `atom` in the quantifier that follows it. Boost refuses a
  // quantifier on a quantifier (a**, a{2}{3}), but for a '+' after a lazy
  // one (a*?+), read here as a repeat of the lazy repeat.
  std::size_t quantified(std::size_t atom) {
    bool stack_allowed = false;
    for (int count = 0;; ++count) {
      skip_extended();
      if (at_end()) return atom;
      const std::size_t at = i_;
      Node r;
      r.kind = Node::Kind::repeat;
      const char c = peek();
      if (c == '*') {
        ++i_, r.min = 0, r.max = kInfinite;
      } else if (c == '+') {
        ++i_, r.min = 1, r.max = kInfinite;
      } else if (c == '?') {
        ++i_, r.min = 0, r.max = 1;
      } else if (c != '{' || !braces(r)) {
        return atom;
      }
      if (count > 0 && !(stack_allowed && c == '+')) fail(at, "a quantifier on a quantifier");
      stack_allowed = false;
      if (peek() == '?') {
        ++i_;
        r.lazy = true;
        stack_allowed = count == 0;
      } else if (peek() == '+') {
        ++i_;
        r.possessive = true;
      }
      r.kids.push_back(atom);
      r.begin = nodes_[atom].begin;
      r.end = i_;
      atom = push(std::move(r));
    }
  }

  // {n}, {n,}, {n,m} at i_; false (and i_ unchanged) when it is a literal '{'.
  bool braces(Node& r) {
    std::size_t j = i_ + 1;
    auto number = [&](std::size_t& out) {
      const std::size_t start = j;
      out = 0;
      while (j < p_.size() && is_digit(p_[j])) {
        out = std::min<std::size_t>(out * 10 + static_cast<std::size_t>(p_[j] - '0'), std::size_t{1} << 30);
        ++j;
      }
      if (j - start > 6) r.long_count = true;
      return j > start;
    };
    if (!number(r.min)) return false;
    r.max = r.min;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(r.max)) r.max = kInfinite;
    }
    if (j >= p_.size() || p_[j] != '}') {
      r.long_count = false;
      return false;
    }
    if (r.max < r.min) fail(i_, "a counted repeat {n,m} with m below n");
    i_ = j + 1;
    return true;
  }

  std::size_t atom(int depth) {
    const std::size_t begin = i_;
    const char c = take("unexpected end of the pattern");
    switch (c) {
      case '(': return group(depth, begin);
      case '[': {
        Node n;
        const ByteSet s = char_class(n);
        const std::size_t k = set(s, begin);
        nodes_[k].negated = n.negated;
        nodes_[k].names_newline = n.names_newline;
        return k;
      }
      case '.': return set(any_but_newline(), begin);
      case '^':
      case '$': return leaf(Node::Kind::assertion, begin, static_cast<unsigned char>(c));
      case '\\': return escape(begin);
      case '*':
      case '+':
      case '?': fail(begin, "a quantifier with nothing to repeat");
      default: return literal(static_cast<unsigned char>(c), begin, true);
    }
  }

  // After '\' outside a class.
  std::size_t escape(std::size_t begin) {
    const char c = take("a '\\' at the end of the pattern");
    // clang-format off
    switch (c) {
      case 'b': case 'B': case 'A': case 'z': case 'Z': case 'G': case '<': case '>': case '`': case '\'': case 'K':
        return leaf(Node::Kind::assertion, begin, static_cast<unsigned char>(c));
      case 'g': case 'k': skip_reference(); return leaf(Node::Kind::backref, begin);
      case 'p': case 'P':
        if (peek() == '{') skip_to('}', "an unterminated \\p{...}"); else take("an unterminated \\p");
        return set(~ByteSet(), begin);
      case 'X': case 'C': return set(~ByteSet(), begin);
      case 'R': return set(vertical(), begin);
      case 'N': return set(any_but_newline(), begin);
      default: break;
    }
    // clang-format on
    if (c >= '1' && c <= '9') {
      while (is_digit(peek())) ++i_;
      return leaf(Node::Kind::backref, begin);
    }
    --i_;
    if (const std::optional<ByteSet> s = class_escape()) return set(*s, begin);
    return literal(escaped_char(next()), begin, false);
  }

  void skip_to(char close, const char* what) {
    while (take(what) != close) {}
  }
  void skip_reference() {  // \g1 \g-1 \g{name} \k<name> \k'name' \k{name}
    const char c = peek();
    if (c == '{')
      skip_to('}', "an unterminated back-reference name");
    else if (c == '<')
      skip_to('>', "an unterminated back-reference name");
    else if (c == '\'') {
      ++i_;
      skip_to('\'', "an unterminated back-reference name");
    } else {
      if (c == '-') ++i_;
      while (is_digit(peek())) ++i_;
    }
  }

  // \d \w \s \h \v and their negations (i_ at the letter): valid inside a
  // class and out.
  std::optional<ByteSet> class_escape() {
    ByteSet s;
    // clang-format off
    switch (peek()) {
      case 'd': case 'D': s = digit(); break;
      case 'w': case 'W': s = word(); break;
      case 's': case 'S': s = space(); break;
      case 'h': case 'H': s = horizontal(); break;
      case 'v': case 'V': s = vertical(); break;
      default: return std::nullopt;
    }
    // clang-format on
    return is_upper(next()) ? ~s : s;
  }

  // The character an escape stands for; `c` is the character after '\'.
  std::uint32_t escaped_char(char c) {
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'a': return '\a';
      case 'e': return 0x1b;
      case 'c': return static_cast<unsigned char>(take("an unterminated \\c")) & 0x1fu;
      case '0': {
        unsigned v = 0;
        for (int k = 0; k < 3 && peek() >= '0' && peek() <= '7'; ++k) v = v * 8 + static_cast<unsigned>(next() - '0');
        return v;
      }
      case 'x': {
        std::uint32_t v = 0;
        if (peek() == '{') {
          ++i_;
          while (peek() != '}') {
            const std::size_t at = i_;
            const int d = hex(take("an unterminated \\x{...}"));
            if (d < 0) fail(at, "\\x{...} holds a character that is not a hex digit");
            v = std::min<std::uint32_t>(v * 16 + static_cast<std::uint32_t>(d), 0x10FFFF);
          }
          ++i_;
        } else {
          for (int k = 0; k < 2 && hex(peek()) >= 0; ++k) v = v * 16 + static_cast<std::uint32_t>(hex(next()));
        }
        return v;
      }
      default: return static_cast<unsigned char>(c);
    }
  }

  // A class member's byte; a code point past one byte is several UTF-8
  // bytes: any high byte stands in for them.
  static unsigned member_byte(std::uint32_t v) { return v > 0xFF ? 0x80u : v; }

  // After '['; fills n.negated and n.names_newline.
  ByteSet char_class(Node& n) {
    const std::size_t open = i_ - 1;
    const char* const unterminated = "an unterminated character class '[...'";
    ByteSet s;
    n.negated = peek() == '^';
    if (n.negated) ++i_;
    bool first = true;
    for (;;) {
      if (at_end()) fail(open, unterminated);
      const char c = take(unterminated);
      if (c == ']' && !first) break;
      first = false;
      if (c == '[' && (peek() == ':' || peek() == '=' || peek() == '.')) {
        s |= posix_class(take(unterminated));
        continue;
      }
      unsigned lo = 0;
      if (c == '\\') {
        if (const std::optional<ByteSet> e = class_escape()) {
          s |= *e;
          continue;
        }
        n.names_newline |= peek() == 'n';
        lo = member_byte(escaped_char(take(unterminated)));
      } else {
        n.names_newline |= c == '\n';
        lo = static_cast<unsigned char>(c);
      }
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
        const std::size_t dash = i_++;
        const char h = take(unterminated);
        if (h == '\\') n.names_newline |= peek() == 'n';
        n.names_newline |= h == '\n';
        const unsigned hi = h == '\\' ? member_byte(escaped_char(take(unterminated))) : static_cast<unsigned char>(h);
        if (hi < lo) fail(dash, "a reversed range in a character class");
        s |= range(lo, hi);
      } else {
        s.set(lo);
      }
    }
    // Under (?i) the members fold before the negation: [^a] matches neither a nor A.
    s = fold(s);
    return n.negated ? ~s : s;
  }

  // [:name:], [:^name:], [=x=], [.x.]; i_ after the opening kind character.
  ByteSet posix_class(char kind) {
    const std::size_t start = i_;
    while (!(peek() == kind && peek(1) == ']')) take("an unterminated [:class:] name");
    std::string_view name = p_.substr(start, i_ - start);
    i_ += 2;
    if (kind != ':') return name.size() == 1 ? one(static_cast<unsigned char>(name[0])) : ~ByteSet();
    const bool negate = !name.empty() && name[0] == '^';
    if (negate) name.remove_prefix(1);
    ByteSet s;
    // clang-format off
    if (name == "alpha") s = range('a', 'z') | range('A', 'Z');
    else if (name == "digit") s = digit();
    else if (name == "alnum") s = range('a', 'z') | range('A', 'Z') | digit();
    else if (name == "space") s = space();
    else if (name == "upper") s = range('A', 'Z');
    else if (name == "lower") s = range('a', 'z');
    else if (name == "xdigit") s = digit() | range('a', 'f') | range('A', 'F');
    else if (name == "word") s = word();
    else if (name == "blank") s = horizontal();
    else if (name == "punct") s = range('!', '/') | range(':', '@') | range('[', '`') | range('{', '~');
    else s = ~ByteSet();  // other classes: assume anything
    // clang-format on
    return negate ? ~s : s;
  }

  // After '('. Look-arounds, atomic groups, flags and comments included.
  std::size_t group(int depth, std::size_t begin) {
    // A condition's look-around recurses here directly, not through alternation().
    if (depth > kMaxDepth) fail(begin, "groups nest too deeply");
    const Flags outer = flags_;
    Node g;
    g.kind = Node::Kind::group;
    g.group = Node::Group::capture;
    if (peek() == '?') {
      ++i_;
      const char c = take("an unterminated group '(?'");
      g.group = Node::Group::plain;
      if (c == '#') {
        skip_to(')', "an unterminated comment '(?#'");
        return leaf(Node::Kind::comment, begin);
      }
      if (c == '=' || c == '!' || (c == '<' && (peek() == '=' || peek() == '!'))) {
        g.negated = (c == '<' ? peek() : c) == '!';
        if (c == '<') ++i_;
        g.group = c == '<' ? Node::Group::look_behind : Node::Group::look_ahead;
      } else if (c == '>') {
        g.group = Node::Group::atomic;
      } else if (c == '<' || c == '\'') {
        skip_to(c == '<' ? '>' : '\'', "an unterminated group name");
        g.group = Node::Group::capture;
      } else if (c == 'P' && peek() == '<') {
        ++i_;
        skip_to('>', "an unterminated group name");
        g.group = Node::Group::capture;
      } else if (c == 'P' && peek() == '=') {
        skip_to(')', "an unterminated back-reference '(?P='");
        return leaf(Node::Kind::backref, begin);
      } else if (c == '-' && is_lower(peek())) {
        --i_;
        return flag_group(depth, begin, outer);
      } else if (c == 'P' || c == 'R' || c == '&' || c == '+' || c == '-' || is_digit(c)) {
        skip_to(')', "an unterminated recursion '(?'");
        return leaf(Node::Kind::recursion, begin);
      } else if (c == '(') {  // conditional: (?(cond)yes|no)
        g.group = Node::Group::conditional;
        std::optional<std::size_t> cond;
        if (peek() == '?') {
          cond = group(depth + 1, i_ - 1);
        } else {
          skip_to(')', "an unterminated condition '(?('");
        }
        return finish_group(std::move(g), depth, begin, outer, cond);
      } else if (c == '|') {
        g.group = Node::Group::branch_reset;
      } else if (c != ':') {
        --i_;
        return flag_group(depth, begin, outer);
      }
    }
    return finish_group(std::move(g), depth, begin, outer);
  }

  // The rest of a group, up to its ')', after which the flags are the outer ones again.
  std::size_t finish_group(Node g, int depth, std::size_t begin, const Flags& outer,
                           std::optional<std::size_t> cond = std::nullopt) {
    g.kids.push_back(alternation(depth + 1));
    if (cond) g.kids.push_back(*cond);
    if (at_end()) fail(begin, "an unterminated group: no ')' closes it");
    ++i_;  // ')': alternation() stops only there or at the end
    flags_ = outer;
    g.begin = begin;
    g.end = i_;
    return push(std::move(g));
  }

  // (?imsx-imsx) sets flags up to the end of the enclosing group;
  // (?imsx-imsx:...) only inside.
  std::size_t flag_group(int depth, std::size_t begin, const Flags& outer) {
    bool on = true;
    for (;;) {
      const std::size_t at = i_;
      const char c = take("an unterminated flag group '(?'");
      if (c == '-') {
        on = false;
      } else if (c == 'i') {
        flags_.icase = on;
      } else if (c == 'x') {
        flags_.extended = on;
      } else if (c == 'm' || c == 's' || c == 'n') {
        // line modes and no-auto-capture change nothing the analyses read
        // ('.' never crosses a line in the matcher: match_not_dot_newline)
      } else if (c == ')') {
        return leaf(Node::Kind::set_flags, begin);
      } else if (c == ':') {
        Node g;
        g.kind = Node::Kind::group;
        g.group = Node::Group::plain;
        g.flag_scope = true;
        return finish_group(std::move(g), depth, begin, outer);
      } else {
        fail(at, "an unknown group flag or group kind after '(?'");
      }
    }
  }

  std::string_view p_;
  std::size_t i_ = 0;
  Flags flags_;
  std::vector<Node> nodes_;
};

std::size_t count_literals(const Tree& t, std::size_t i) {
  const Node& n = t[i];
  switch (n.kind) {
    case Node::Kind::literal: return n.starts_char ? 1 : 0;
    case Node::Kind::seq:
    case Node::Kind::alt: {
      std::size_t sum = 0;
      for (std::size_t k : n.kids) sum += count_literals(t, k);
      return sum;
    }
    case Node::Kind::repeat: return n.min == 0 ? 0 : count_literals(t, n.kids[0]);
    case Node::Kind::group: return n.look_around() ? 0 : count_literals(t, n.kids[0]);
    default: return 0;
  }
}

}  // namespace

ParseResult parse(std::string_view pattern) {
  ParseResult r;
  try {
    r.tree = Parser(pattern).parse();
  } catch (const Failure& f) {
    r.error = {f.offset, f.message};
  }
  return r;
}

std::size_t specificity(const Tree& tree) { return tree.nodes.empty() ? 0 : count_literals(tree, tree.root); }

std::size_t specificity(std::string_view pattern) {
  const ParseResult r = parse(pattern);
  return r.tree ? specificity(*r.tree) : 0;
}

}  // namespace errshim::detail::regex
