// The shared regex parser (src/grammar/regex_syntax.hpp): the tree it builds, where
// it refuses a pattern, and the specificity pass the winner rule uses, which
// must give a template's regex the template's own literal length.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <errshim/catalog.hpp>

#include <boost/regex.hpp>

#include "literal_extract.hpp"
#include "matcher.hpp"
#include "regex_syntax.hpp"
#include "template.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

namespace fs = std::filesystem;
namespace rx = detail::regex;

// The tree as an s-expression: enough to tell every node kind and the
// attributes the analyses read.
std::string show(const rx::Tree& t, std::size_t i) {
  const rx::Node& n = t[i];
  auto kids = [&] {
    std::string s;
    for (std::size_t k : n.kids) s += " " + show(t, k);
    return s;
  };
  switch (n.kind) {
    case rx::Node::Kind::literal: {
      std::string s = n.value >= 0x20 && n.value < 0x7F ? std::string(1, static_cast<char>(n.value))
                                                        : "#" + std::to_string(n.value);
      if (n.quoted) s += "q";
      if (n.icase) s += "i";
      if (!n.starts_char) s += "+";
      return s;
    }
    case rx::Node::Kind::set:
      return std::string("[") + std::to_string(n.set.count()) + (n.negated ? " neg" : "") +
             (n.names_newline ? " nl" : "") + "]";
    case rx::Node::Kind::seq: return "(seq" + kids() + ")";
    case rx::Node::Kind::alt: return "(alt" + kids() + ")";
    case rx::Node::Kind::repeat:
      return "(rep " + std::to_string(n.min) + "," + (n.max == rx::kInfinite ? "inf" : std::to_string(n.max)) +
             (n.possessive ? " possessive" : "") + (n.lazy ? " lazy" : "") + kids() + ")";
    case rx::Node::Kind::group: {
      static const char* const names[] = {"capture", "plain", "reset", "atomic", "ahead", "behind", "cond"};
      return std::string("(") + names[static_cast<int>(n.group)] + (n.negated ? " neg" : "") +
             (n.flag_scope ? " flags" : "") + kids() + ")";
    }
    case rx::Node::Kind::assertion: return std::string("@") + static_cast<char>(n.value);
    case rx::Node::Kind::backref: return "backref";
    case rx::Node::Kind::recursion: return "recursion";
    case rx::Node::Kind::comment: return "comment";
    case rx::Node::Kind::set_flags: return "flags";
  }
  return "?";
}

struct ShapeCase {
  const char* name;
  const char* pattern;
  const char* tree;
};

class ParseShape : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ParseShape, BuildsTheTree) {
  const rx::ParseResult r = rx::parse(GetParam().pattern);
  ASSERT_TRUE(r.tree) << r.error.message << " at " << r.error.offset;
  EXPECT_EQ(show(*r.tree, r.tree->root), GetParam().tree);
  // Children before parents: the root is last, every kid precedes its node.
  EXPECT_EQ(r.tree->root, r.tree->nodes.size() - 1);
  for (std::size_t i = 0; i < r.tree->nodes.size(); ++i)
    for (std::size_t k : r.tree->nodes[i].kids) EXPECT_LT(k, i);
}

INSTANTIATE_TEST_SUITE_P(
    RegexSyntax, ParseShape,
    ::testing::Values(
        ShapeCase{"Literals", "ab", "(seq a b)"}, ShapeCase{"Alternation", "a|bc|", "(alt a (seq b c) (seq))"},
        ShapeCase{"CountedRepeats", "a{2}b{1,}c{0,3}", "(seq (rep 2,2 a) (rep 1,inf b) (rep 0,3 c))"},
        ShapeCase{"PossessiveAndLazy", "a++b*?", "(seq (rep 1,inf possessive a) (rep 0,inf lazy b))"},
        ShapeCase{"StackedQuantifiers", "a{2}?+", "(rep 1,inf (rep 2,2 lazy a))"},
        ShapeCase{"BraceThatIsNoCount", "a{x", "(seq a { x)"},
        ShapeCase{"Groups", "(a)(?:b)(?<n>c)(?P<m>d)(?'o'e)",
                  "(seq (capture a) (plain b) (capture c) (capture d) (capture e))"},
        ShapeCase{"AtomicGroup", "(?>a+)", "(atomic (rep 1,inf a))"},
        ShapeCase{"LookArounds", "(?=a)(?!b)(?<=c)(?<!d)", "(seq (ahead a) (ahead neg b) (behind c) (behind neg d))"},
        ShapeCase{"TemperedRun", "(?:(?! end)[^\\n])++",
                  "(rep 1,inf possessive (plain (seq (ahead neg (seq   e n d)) [255 neg nl])))"},
        ShapeCase{"Classes", "[abc][^a-c][]x].\\d\\S", "(seq [3] [253 neg] [2] [255] [10] [250])"},
        ShapeCase{"ClassNamesNewline", "[\\n][x\\n-\\r]", "(seq [1 nl] [5 nl])"},
        ShapeCase{"PosixClass", "[[:digit:]_]", "[11]"},
        ShapeCase{"Escapes", "\\n\\t\\.\\x41\\x{1F600}\\0", "(seq #10 #9 . A #128512 #0)"},
        ShapeCase{"RawUtf8", "\xC3\xA9", "(seq #195 #169+)"},
        ShapeCase{"Quoted", "\\Qa+\\E*", "(seq aq (rep 0,inf +q))"},
        ShapeCase{"Anchors", "^\\bx\\z$", "(seq @^ @b x @z @$)"},
        ShapeCase{"BackReferences", "(a)\\1\\k<n>\\g{-1}(?P=n)", "(seq (capture a) backref backref backref backref)"},
        ShapeCase{"Recursion", "(?R)(?1)(?&n)", "(seq recursion recursion recursion)"},
        ShapeCase{"CaseFlags", "(?i)a(?-i:b)", "(seq flags ai (plain flags b))"},
        ShapeCase{"Comment", "a(?#note)b", "(seq a comment b)"},
        ShapeCase{"Conditional", "(?(?=a)ab|c)", "(cond (alt (seq a b) c) (ahead a))"},
        ShapeCase{"ExtendedMode", "(?x) a + # note\n b", "(seq flags (rep 1,inf a) b)"}),
    [](const auto& info) { return std::string(info.param.name); });

struct FailureCase {
  const char* name;
  std::string pattern;
  std::size_t offset;
  const char* message;
};

class ParseFailure : public ::testing::TestWithParam<FailureCase> {};

TEST_P(ParseFailure, SaysWhereAndWhat) {
  const rx::ParseResult r = rx::parse(GetParam().pattern);
  ASSERT_FALSE(r.tree);
  EXPECT_EQ(r.error.offset, GetParam().offset);
  EXPECT_NE(r.error.message.find(GetParam().message), std::string::npos) << r.error.message;
  EXPECT_EQ(rx::specificity(GetParam().pattern), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    RegexSyntax, ParseFailure,
    ::testing::Values(FailureCase{"UnterminatedClass", "x[a-z", 1, "unterminated character class"},
                      FailureCase{"UnterminatedGroup", "x(a", 1, "unterminated group"},
                      FailureCase{"UnbalancedParen", "ab)c", 2, "unbalanced ')'"},
                      FailureCase{"NothingToRepeat", "a|*b", 2, "nothing to repeat"},
                      FailureCase{"BadHex", "\\x{4z}", 4, "not a hex digit"},
                      FailureCase{"ReversedRange", "[z-a]", 2, "reversed range"},
                      FailureCase{"ReversedCount", "a{3,2}", 1, "m below n"},
                      FailureCase{"StackedQuantifiers", "ab*{2}", 3, "a quantifier on a quantifier"},
                      FailureCase{"StackedAfterLazy", "a*?+*", 4, "a quantifier on a quantifier"},
                      FailureCase{"UnknownFlag", "(?iQ)", 3, "unknown group flag"},
                      FailureCase{"TrailingBackslash", "abc\\", 4, "at the end of the pattern"},
                      FailureCase{"Verb", "(*FAIL)", 1, "nothing to repeat"},
                      FailureCase{"UnterminatedComment", "a(?#x", 5, "unterminated comment"},
                      FailureCase{"QuantifiedComment", "a(?#x)*", 6, "after a comment"},
                      FailureCase{"TooDeep", std::string(rx::kMaxDepth + 1, '(') + std::string(rx::kMaxDepth + 1, ')'),
                                  rx::kMaxDepth + 1, "nest too deeply"},
                      FailureCase{"DeepConditions",
                                  [] {
                                    std::string p;
                                    for (int i = 0; i < 100000; ++i) p += "(?";  // (?(?(?...: conditions of conditions
                                    return p;
                                  }(),
                                  2 * (rx::kMaxDepth + 1), "nest too deeply"}),
    [](const auto& info) { return std::string(info.param.name); });

struct SpecificityCase {
  const char* name;
  std::string pattern;
  std::size_t expected;
};

class Specificity : public ::testing::TestWithParam<SpecificityCase> {};

TEST_P(Specificity, CountsMandatoryLiteralCodePoints) {
  EXPECT_EQ(rx::specificity(GetParam().pattern), GetParam().expected);
  EXPECT_EQ(detail::literal_length(GetParam().pattern), GetParam().expected);  // the matcher's winner rule
}

INSTANTIATE_TEST_SUITE_P(
    RegexSyntax, Specificity,
    ::testing::Values(
        SpecificityCase{"Plain", "abc", 3}, SpecificityCase{"EscapedNewline", "line one\\nline two", 17},
        SpecificityCase{"HexEscape", "a\\x{01}b", 3}, SpecificityCase{"ShortHexEscape", "\\x41", 1},
        SpecificityCase{"NonAscii", "caf\xC3\xA9 failed", 11},
        SpecificityCase{"FourByteCharacter", "\xF0\x9F\x98\x80!", 2}, SpecificityCase{"EscapedPunctuation", "a\\.b", 3},
        SpecificityCase{"LookAheadsAndBehinds", "(?<=x)a(?!bc)d(?=e)", 2},
        SpecificityCase{"TemperedRun", "x(?<a>(?:(?! end)[^\\n])++) end", 5},
        SpecificityCase{"OptionalAtoms", "ab?c*d{0,2}e", 2}, SpecificityCase{"OptionalGroup", "(?:abc)?d", 1},
        SpecificityCase{"RepeatedAtom", "a+b{3}", 2}, SpecificityCase{"Classes", "[abc]\\d+.x", 1},
        SpecificityCase{"BackReferenceName", "(?<n>a)\\k<name>", 1}, SpecificityCase{"EveryBranch", "foo|ba", 5},
        SpecificityCase{"Quoted", "\\Qa.b\\E", 3}, SpecificityCase{"Anchors", "^a$", 1}),
    [](const auto& info) { return std::string(info.param.name); });

// The two messages the matcher and the template code counted differently.
TEST(RegexSyntax, TemplateSpecificityEqualsItsRegexs) {
  for (const char* text : {"line one\nline two", "caf\xC3\xA9 failed", "bad \x01 byte {x} and {y}, {x}"}) {
    const detail::CompiledTemplate ct = detail::compile_template(text);
    EXPECT_EQ(ct.literal_length, rx::specificity(ct.regex)) << text;
    EXPECT_EQ(detail::literal_length(ct.regex), ct.literal_length) << text;
  }
  EXPECT_EQ(detail::compile_template("line one\nline two").literal_length, 17u);
  EXPECT_EQ(detail::compile_template("caf\xC3\xA9 failed").literal_length, 11u);
}

// Boost applies a quantifier after a comment to the atom before it, so
// "xa(?#c)*y" matches "xy": no run holding that 'a' may be claimed (the old
// scanner claimed "xa", and the prefilter would have missed the match).
TEST(RegexSyntax, QuantifiedCommentClaimsNoLiteralBeforeIt) {
  const std::string re = "xa(?#c)*y";
  ASSERT_TRUE(boost::regex_search(std::string("xy"), boost::regex(re, boost::regex::perl)));
  const detail::RegexLiterals lits = detail::required_literals(re);
  for (const detail::RequiredRun& r : lits.runs) EXPECT_EQ(r.text.find('a'), std::string::npos) << r.text;
}

std::size_t code_points(const std::vector<std::string>& texts) {
  std::size_t n = 0;
  for (const std::string& t : texts)
    n += static_cast<std::size_t>(
        std::count_if(t.begin(), t.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
  return n;
}

std::vector<CatalogPtr> shipped_catalogs() {
  std::vector<CatalogPtr> out{CatalogBuilder().add_embedded().build()};
  std::vector<fs::path> layers;
  for (const auto& f : fs::directory_iterator(ERRSHIM_GENERATED_LAYER_DIR))
    if (f.path().extension() == ".snapshot") layers.push_back(f.path());
  std::sort(layers.begin(), layers.end());
  for (const fs::path& p : layers) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    out.push_back(CatalogBuilder().add_embedded().add_snapshot(bytes.str(), p.string()).build());
  }
  return out;
}

// Every shipped pattern (curated and generated layers) parses, and the
// specificity the matcher ranks an entry by is its template's literal length.
TEST(RegexSyntax, ShippedCatalogParsesAndTemplatesKeepTheirSpecificity) {
  std::size_t templates = 0;
  for (const CatalogPtr& cat : shipped_catalogs()) {
    const detail::MatchPlan plan = detail::plan_matching(cat->entries());
    for (std::size_t i = 0; i < cat->entries().size(); ++i) {
      const Entry& e = *cat->entries()[i];
      const rx::ParseResult r = rx::parse(e.pattern);
      ASSERT_TRUE(r.tree) << e.id << ": " << r.error.message << " at " << r.error.offset;
      for (const std::string& u : e.unless) EXPECT_TRUE(rx::parse(u).tree) << e.id << " unless " << u;
      EXPECT_EQ(plan.items[i].specificity, rx::specificity(*r.tree)) << e.id;
      if (e.template_text.empty()) continue;
      ++templates;
      // Recompiled without the entry's capture_patterns (which are regex of
      // its own): the literals alone.
      const detail::CompiledTemplate ct = detail::compile_template(e.template_text);
      EXPECT_EQ(ct.literal_length, code_points(ct.literals)) << e.id;
      EXPECT_EQ(rx::specificity(ct.regex), ct.literal_length) << e.id;
    }
  }
  EXPECT_GT(templates, 1000u);
}

}  // namespace
}  // namespace errshim
