// Pins compile_template / regex_escape. Every generated regex is run through
// boost::regex_search, because the regex text is only the means: what matters
// is what it matches and captures.

#include "template.hpp"

#include <gtest/gtest.h>

#include <boost/regex.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace errshim::detail {
namespace {

using Captures = std::map<std::string, std::string>;
using Names = std::vector<std::string>;

// The captures of the first match of `ct` in `text`, or nullopt.
std::optional<Captures> search(const CompiledTemplate& ct, const std::string& text) {
  const boost::regex re(ct.regex, boost::regex::perl);
  boost::smatch m;
  if (!boost::regex_search(text, m, re)) return std::nullopt;
  Captures out;
  for (const std::string& name : ct.capture_names) out[name] = m[name].str();
  return out;
}

std::optional<Captures> search(std::string_view tmpl, const std::string& text, const Names& names = {},
                               const std::map<std::string, std::string>& patterns = {}) {
  return search(compile_template(tmpl, names, patterns), text);
}

// The error compile_template throws for `tmpl`; fails the test if none.
template_error error_of(std::string_view tmpl, const Names& names = {},
                        const std::map<std::string, std::string>& patterns = {}) {
  try {
    compile_template(tmpl, names, patterns);
  } catch (const template_error& e) {
    return e;
  }
  ADD_FAILURE() << "no template_error for: " << tmpl;
  return template_error(static_cast<std::size_t>(-1), "");
}

// ---- real templates -------------------------------------------------------

TEST(Template, MetaSdpaCapturesNamedAndAnonymous) {
  const auto ct =
      compile_template("Meta SDPA does not support q head dim {q_head}: q dims {:?}, k dims {:?}, v dims {:?}.",
                       {"q_dims", "k_dims", "v_dims"});
  EXPECT_EQ(ct.capture_names, (Names{"q_head", "q_dims", "k_dims", "v_dims"}));
  const auto c = search(ct,
                        "Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], "
                        "k dims [1, 8, 7, 48], v dims [1, 8, 7, 48].");
  ASSERT_TRUE(c);
  EXPECT_EQ(
      *c,
      (Captures{
          {"q_head", "48"}, {"q_dims", "[1, 32, 7, 48]"}, {"k_dims", "[1, 8, 7, 48]"}, {"v_dims", "[1, 8, 7, 48]"}}));
}

TEST(Template, RustDebugPlaceholderAtEndRunsToEndOfLine) {
  const auto ct = compile_template("unsupported sdpa type {other:?}");
  EXPECT_EQ(ct.regex, "unsupported sdpa type (?<other>[^\\n]+)");
  const auto c = search(ct, "Error: unsupported sdpa type U8\nnext line");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("other"), "U8");
}

TEST(Template, RepeatedNameMustRepeatTheSameText) {
  const char* tmpl =
      "You have set `use_cache` to `False`, but {cache_arg} is set to {cache_arg_value}. "
      "{cache_arg} will have no effect.";
  const auto ct = compile_template(tmpl);
  EXPECT_EQ(ct.capture_names, (Names{"cache_arg", "cache_arg_value"}));
  EXPECT_NE(ct.regex.find("\\k<cache_arg>"), std::string::npos);
  const auto c = search(ct,
                        "You have set `use_cache` to `False`, but cache_implementation is set to "
                        "static. cache_implementation will have no effect.");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"cache_arg", "cache_implementation"}, {"cache_arg_value", "static"}}));
  EXPECT_FALSE(search(ct,
                      "You have set `use_cache` to `False`, but cache_implementation is set to "
                      "static. past_key_values will have no effect."));
}

TEST(Template, PureLiteralTemplateIsEscaped) {
  const std::string text =
      "This model does not support the quantized cache. If you want your model to support "
      "quantized cache, please open an issue and tag @zucchini-nlp.";
  const auto ct = compile_template(text);
  EXPECT_TRUE(ct.capture_names.empty());
  EXPECT_EQ(ct.literals, Names{text});
  EXPECT_EQ(ct.literal_length, text.size());
  EXPECT_TRUE(search(ct, text));
  std::string dot_replaced = text;
  dot_replaced[dot_replaced.find('.')] = 'x';
  EXPECT_FALSE(search(ct, dot_replaced));
  std::string last_dot_replaced = text;
  last_dot_replaced.back() = 'x';
  EXPECT_FALSE(search(ct, last_dot_replaced));
}

TEST(Template, PythonPercentStringTemplate) {
  // transformers, tokenization_utils.py: logger.warning("...", kwargs)
  const auto c = search("Keyword arguments %s not recognized.",
                        "Keyword arguments {'add_special_token': True} not recognized.", {"kwargs"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("kwargs"), "{'add_special_token': True}");
}

TEST(Template, PythonFStringTemplate) {
  const auto ct = compile_template("Setting `pad_token_id` to `eos_token_id`:{eos_token_id} for open-end generation.");
  const auto c = search(ct, "Setting `pad_token_id` to `eos_token_id`:50256 for open-end generation.");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("eos_token_id"), "50256");
}

TEST(Template, PythonStrFormatTemplate) {
  const auto c = search(
      "Token indices sequence length is longer than the specified maximum sequence length for "
      "this model ({} > {}). Running this sequence through the model will result in indexing "
      "errors",
      "Token indices sequence length is longer than the specified maximum sequence length for "
      "this model (1050 > 1024). Running this sequence through the model will result in indexing "
      "errors",
      {"length", "max_length"});
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"length", "1050"}, {"max_length", "1024"}}));
}

// ---- Boost facts the generator relies on ----------------------------------

TEST(Template, BoostBackreferenceByName) {
  // Boost 1.74 reads both \k<name> and \g{name}; the generator emits \k<name>.
  for (const char* pattern : {"(?<w>[a-z]+) and \\k<w>", "(?<w>[a-z]+) and \\g{w}"}) {
    const boost::regex re(pattern, boost::regex::perl);
    const std::string same = "cats and cats", different = "cats and dogs";
    boost::smatch m;
    EXPECT_TRUE(boost::regex_search(same, m, re)) << pattern;
    EXPECT_EQ(m["w"].str(), "cats");
    EXPECT_FALSE(boost::regex_search(different, m, re)) << pattern;
  }
}

// ---- regex_escape ---------------------------------------------------------

TEST(Template, RegexEscapeEscapesMetacharacters) {
  EXPECT_EQ(regex_escape("a.b*c+d?e^f$g|h(i)j[k]l{m}n\\o"),
            "a\\.b\\*c\\+d\\?e\\^f\\$g\\|h\\(i\\)j\\[k\\]l\\{m\\}n\\\\o");
  EXPECT_EQ(regex_escape("x\ny\tz\r"), "x\\ny\\tz\\r");
  EXPECT_EQ(regex_escape(std::string("a\0b\x1f", 4)), "a\\x{00}b\\x{1F}");
}

TEST(Template, RegexEscapeLeavesMeaningfulEscapesAlone) {
  // \< \> are word edges and \` \' buffer ends in Boost: these stay bare.
  EXPECT_EQ(regex_escape("<a> 'b' `c` #d -e =f !g :h /i @j %k &l ~m \"n\" ,;"),
            "<a> 'b' `c` #d -e =f !g :h /i @j %k &l ~m \"n\" ,;");
}

TEST(Template, RegexEscapeMatchesEveryByteLiterally) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const boost::regex re(regex_escape(all), boost::regex::perl);
  EXPECT_TRUE(boost::regex_match(all, re));
  std::string other = all;
  other['.'] = 'x';
  EXPECT_FALSE(boost::regex_match(other, re));
}

// ---- placeholder forms ----------------------------------------------------

TEST(Template, AnonymousDefaultNamesAreArgN) {
  const auto ct = compile_template("got {} and %s then {:?}");
  EXPECT_EQ(ct.capture_names, (Names{"arg1", "arg2", "arg3"}));
  const auto c = search(ct, "got a and b then c d");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"arg1", "a"}, {"arg2", "b"}, {"arg3", "c d"}}));
}

TEST(Template, MiddlePlaceholderEndsAtTheNextLiteralAndStaysOnOneLine) {
  const auto ct = compile_template("{a} and {b} end");
  EXPECT_EQ(ct.regex, "(?:^|(?<= and ))(?<a>(?:(?! and )[^\\n])++) and (?<b>(?:(?! end)[^\\n])++) end");
  const auto c = search(ct, "x and y and z end");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"a", "x"}, {"b", "y and z"}}));
  EXPECT_FALSE(search(ct, "x and y\nz end"));
}

TEST(Template, ExpressionNamedByLastIdentifier) {
  const auto ct = compile_template(
      "{generation_config.cache_implementation} is not {self.__class__.__name__}; "
      "{len(x)} {type(model).__name__!r} {a.b[0]} {n if n else None} {cfg.hidden_size // 2}");
  EXPECT_EQ(ct.capture_names, (Names{"cache_implementation", "name", "x", "b", "n", "hidden_size"}));
}

TEST(Template, ExpressionWithNestedBracketsAndQuotes) {
  const auto ct = compile_template("a {x[\"a\"]} b {list(dims)} c {d['}:!']} d {f(a, {'k': v})} e {s != t} f");
  EXPECT_EQ(ct.capture_names, (Names{"x", "dims", "d", "v", "t"}));
  const auto c = search(ct, "a 1 b [2, 3] c 4 d 5 e True f");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"x", "1"}, {"dims", "[2, 3]"}, {"d", "4"}, {"v", "5"}, {"t", "True"}}));
}

TEST(Template, StringLiteralsAndNumbersGiveNoName) {
  // f"..." prefixes, string contents and number suffixes are not identifiers.
  const auto ct = compile_template("a {f'{q}' + 'w'} b {0x1f + 1e5} c {\"-\" * 10} d");
  EXPECT_EQ(ct.capture_names, (Names{"arg1", "arg2", "arg3"}));
}

TEST(Template, ConversionAndFormatSpecAreIgnored) {
  // {:>8} shows argument 0, so {1:?} is a second anonymous capture.
  const auto ct = compile_template("x={x!r} y={y:.2f} w={w:>{width}} z={z!s:>8} r={:>8} d={1:?}");
  EXPECT_EQ(ct.capture_names, (Names{"x", "y", "w", "z", "arg1", "arg2"}));
  const auto c = search(ct, "x='a' y=1.50 w=  v z=     zz r=       1 d=Some(2)");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("y"), "1.50");
  EXPECT_EQ(c->at("arg2"), "Some(2)");
}

TEST(Template, DoubledBracesAndPercentsAreLiteral) {
  const auto ct = compile_template("{{x}} is {{}} at {n}%% and }}");
  EXPECT_EQ(ct.capture_names, Names{"n"});
  EXPECT_EQ(ct.literals, (Names{"{x} is {} at ", "% and }"}));
  const auto c = search(ct, "{x} is {} at 5% and }");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("n"), "5");
}

TEST(Template, ProsePercentIsLiteral) {
  // A '%' that does not start a conversion is text: "100% sure", "50%,".
  const auto ct = compile_template("I am 100% sure, %s is 50%, or 7%");
  EXPECT_EQ(ct.capture_names, Names{"arg1"});
  EXPECT_TRUE(search(ct, "I am 100% sure, it is 50%, or 7%"));
}

TEST(Template, PercentNamedMapping) {
  const auto ct = compile_template("%(dtype)s is not %(other)r, again %(dtype)s");
  EXPECT_EQ(ct.capture_names, (Names{"dtype", "other"}));
  const auto c = search(ct, "float16 is not 'int8', again float16");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"dtype", "float16"}, {"other", "'int8'"}}));
  EXPECT_FALSE(search(ct, "float16 is not 'int8', again bfloat16x"));
}

TEST(Template, PercentIntegerMatchesIntegersOnly) {
  const auto ct = compile_template("got %d heads and %i layers, %.3f loss %x", {"heads", "layers", "loss", "mask"});
  EXPECT_EQ(ct.regex,
            "got (?<heads>-?\\d+) heads and (?<layers>-?\\d+) layers, (?<loss>(?:(?! loss )[^\\n])++) loss "
            "(?<mask>[^\\n]+)");
  const auto c = search(ct, "got -12 heads and 4 layers, 0.250 loss ff");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"heads", "-12"}, {"layers", "4"}, {"loss", "0.250"}, {"mask", "ff"}}));
  EXPECT_FALSE(search(ct, "got many heads and 4 layers, 0.250 loss ff"));
}

TEST(Template, PercentIntegerWidthAndSign) {
  // Width padding stays outside the capture; %+d always prints a sign.
  const auto c = search("[%5d] [%-4d] [%+d]", "[   42] [7   ] [+3]", {"a", "b", "c"});
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"a", "42"}, {"b", "7"}, {"c", "+3"}}));
  EXPECT_FALSE(search("[%+d]", "[3]", {"c"}));
}

TEST(Template, PositionalIndexSharesItsArgument) {
  // {0} is argument 0, the one the first {} shows: same capture, same text.
  const auto ct = compile_template("{} vs {0} vs {}", {"a", "b"});
  EXPECT_EQ(ct.capture_names, (Names{"a", "b"}));
  EXPECT_EQ(ct.regex, "(?:^|(?<= vs ))(?<a>(?:(?! vs )[^\\n])++) vs \\k<a> vs (?<b>[^\\n]+)");
  EXPECT_TRUE(search(ct, "x vs x vs y"));
  EXPECT_FALSE(search(ct, "x vs z vs y"));
}

TEST(Template, ExplicitPositionalsNamedInOrderOfAppearance) {
  const auto named = compile_template("{1} before {0}, {1} again", {"second", "first"});
  EXPECT_EQ(named.capture_names, (Names{"second", "first"}));
  const auto c = search(named, "b before a, b again");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"second", "b"}, {"first", "a"}}));
  EXPECT_EQ(compile_template("{} then {1}").capture_names, (Names{"arg1", "arg2"}));
}

TEST(Template, SelfDocumentingExpressionPrintsItsText) {
  const auto ct = compile_template("bad {x=} and {y = !r}");
  EXPECT_EQ(ct.literals, (Names{"bad x=", " and y = "}));
  const auto c = search(ct, "bad x=3 and y = 'q'");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"x", "3"}, {"y", "'q'"}}));
  EXPECT_EQ(compile_template("ok {a == b} {c <= d}").literals, (Names{"ok ", " "}));
}

TEST(Template, PrettyDebugMaySpanLines) {
  const auto ct = compile_template("config {:#?} is invalid", {"config"});
  const auto c = search(ct, "config Config {\n    a: 1,\n} is invalid");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("config"), "Config {\n    a: 1,\n}");
}

TEST(Template, CapturePatternsOverrideTheDefault) {
  const auto ct = compile_template("q head dim {q_head}: q dims {:?}", {"q_dims"},
                                   {{"q_head", "\\d+"}, {"q_dims", "\\[[^\\]]*\\]"}});
  EXPECT_EQ(ct.regex, "q head dim (?<q_head>\\d+): q dims (?<q_dims>\\[[^\\]]*\\])");
  EXPECT_TRUE(search(ct, "q head dim 48: q dims [1, 2] trailing"));
  EXPECT_FALSE(search(ct, "q head dim x48: q dims [1, 2]"));
}

TEST(Template, PlaceholderNeverHoldsTheLiteralAfterIt) {
  // The run before ": " ends at the first ": " after its start; a lazy run
  // grew past it to "k: v" once the integer failed to match there. A run
  // that opens the template starts at a line start or right after its
  // literal, so the match now starts after the first ": ".
  const auto c = search("%s: %d items", "k: v: 3 items", {"key", "count"});
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"key", "v"}, {"count", "3"}}));
}

TEST(Template, PlaceholderBeforeAnotherPlaceholderStaysLazy) {
  const auto ct = compile_template("x {a}{b} end");
  EXPECT_EQ(ct.regex, "x (?<a>[^\\n]+?)(?<b>(?:(?! end)[^\\n])++) end");
  const auto c = search(ct, "x pq end");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Captures{{"a", "p"}, {"b", "q"}}));
}

TEST(Template, ANearMissWithTheLastLiteralMissingStaysWithinBoostsLimit) {
  // Middle literals repeated, the last one missing, 16 KiB on one line:
  // lazy runs tried every split among the repeats until Boost gave up
  // (it throws at its state limit); the tempered runs make one pass.
  const auto ct = compile_template("load {a} from {b} at {c} done");
  std::string text = "load 1";
  while (text.size() < 16 * 1024) text += " from 1 at 1";
  bool found = true;
  EXPECT_NO_THROW(found = search(ct, text).has_value());
  EXPECT_FALSE(found);
}

TEST(Template, CaptureNamesAreDistinctInOrderOfFirstUse) {
  EXPECT_EQ(compile_template("{b} {a} - {b} %(c)s {a}").capture_names, (Names{"b", "a", "c"}));
}

TEST(Template, LiteralsAndLiteralLength) {
  const auto ct = compile_template("{x} → {{y}} {z}. %% done");
  EXPECT_EQ(ct.literals, (Names{" → {y} ", ". % done"}));
  // Characters, not bytes: the arrow counts once; escapes count as one.
  EXPECT_EQ(ct.literal_length, 7u + 8u);
}

TEST(Template, RegexIsUnanchored) {
  const auto c = search("failed: {}", "Traceback...\nRuntimeError: failed: boom\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("arg1"), "boom");
}

// ---- errors ----------------------------------------------------------------

TEST(Template, UnmatchedClosingBraceThrows) {
  const auto e = error_of("shape } is wrong");
  EXPECT_EQ(e.offset, 6u);
  EXPECT_STREQ(e.what(), "unmatched '}' at offset 6 (write '}}' for a literal '}')");
}

TEST(Template, UnclosedOpeningBraceThrows) {
  auto e = error_of("expected { got {x}");
  EXPECT_EQ(e.offset, 9u);
  EXPECT_STREQ(e.what(),
               "unclosed '{' at offset 9 in '{ got {x}': no matching '}' (write '{{' for a "
               "literal '{')");
  EXPECT_EQ(error_of("dims {q_dims:?").offset, 5u);
  EXPECT_EQ(error_of("value {x!r").offset, 6u);
  EXPECT_EQ(error_of("tail {").offset, 5u);
}

TEST(Template, SpacesOnlyPlaceholderThrows) {
  const auto e = error_of("value { } here");
  EXPECT_EQ(e.offset, 6u);
  EXPECT_STREQ(e.what(),
               "empty placeholder '{ }' at offset 6: only spaces between the braces (write '{}' "
               "for an anonymous placeholder)");
  EXPECT_EQ(error_of("value { :?} here").offset, 6u);
}

TEST(Template, UnbalancedBracketInExpressionThrows) {
  auto e = error_of("dims {list(dims} here");
  EXPECT_EQ(e.offset, 10u);
  EXPECT_STREQ(e.what(),
               "unbalanced '(' at offset 10 in the placeholder '{list(dims}': '}' comes before "
               "its ')'");
  e = error_of("dims {x)} here");
  EXPECT_EQ(e.offset, 7u);
  EXPECT_STREQ(e.what(), "unbalanced ')' at offset 7 in the placeholder '{x)': nothing opens it");
  EXPECT_EQ(error_of("dims {x[0)]} here").offset, 7u);
}

TEST(Template, UnterminatedStringInExpressionThrows) {
  const auto e = error_of("missing { in user's config}");
  EXPECT_EQ(e.offset, 17u);
  EXPECT_NE(std::string(e.what()).find("unterminated string literal at offset 17"), std::string::npos);
}

TEST(Template, InvalidConversionThrows) {
  const auto e = error_of("value {x!q} here");
  EXPECT_EQ(e.offset, 8u);
  EXPECT_STREQ(e.what(),
               "invalid conversion at offset 8 in the placeholder '{x!q} here': expected !r, !s "
               "or !a before ':' or '}'");
  EXPECT_EQ(error_of("value {x!rr} here").offset, 8u);
}

TEST(Template, SelfDocumentingWithoutExpressionThrows) { EXPECT_EQ(error_of("value { =} here").offset, 6u); }

TEST(Template, AnonymousNameCountMismatchThrows) {
  auto e = error_of("a {} b {:?} c %s", {"x", "y"});
  EXPECT_STREQ(e.what(), "template has 3 anonymous placeholders but captures: lists 2 names");
  EXPECT_EQ(e.offset, 14u);  // the first placeholder left without a name
  e = error_of("a {} b {0}", {"x", "y"});
  EXPECT_STREQ(e.what(), "template has 1 anonymous placeholder but captures: lists 2 names");
  e = error_of("only {named} here", {"x"});
  EXPECT_STREQ(e.what(), "template has 0 anonymous placeholders but captures: lists 1 name");
}

TEST(Template, InvalidCaptureNameThrows) {
  auto e = error_of("a {} b {} c", {"ok", "q-dims"});
  EXPECT_EQ(e.offset, 7u);
  EXPECT_STREQ(e.what(),
               "captures: entry 2 'q-dims' is not a valid capture name (capture names are "
               "[A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(error_of("a {} b", {"1st"}).offset, 2u);
  e = error_of("a %(my key)s b");
  EXPECT_EQ(e.offset, 2u);
  EXPECT_NE(std::string(e.what()).find("'my key', which is not valid"), std::string::npos);
  e = error_of("a {größe} b");
  EXPECT_EQ(e.offset, 2u);
  EXPECT_NE(std::string(e.what()).find("'größe', which is not valid"), std::string::npos);
}

TEST(Template, IncompletePercentKeyThrows) {
  auto e = error_of("bad %(dtype) value");
  EXPECT_EQ(e.offset, 4u);
  EXPECT_STREQ(e.what(),
               "incomplete %-placeholder '%(dtype) ' at offset 4: expected a conversion such as "
               "'s' or 'd' after '%(dtype)'");
  EXPECT_EQ(error_of("bad %(dtype").offset, 4u);
}

TEST(Template, UnknownCapturePatternThrows) {
  auto e = error_of("dim {q_head} of {}", {"dims"}, {{"q_heads", "\\d+"}});
  EXPECT_EQ(e.offset, 0u);
  EXPECT_STREQ(e.what(),
               "capture_patterns names 'q_heads', which this template does not capture (its "
               "captures: q_head, dims)");
  e = error_of("plain text", {}, {{"x", "\\d+"}});
  EXPECT_STREQ(e.what(),
               "capture_patterns names 'x', which this template does not capture (it has no "
               "captures)");
}

TEST(Template, InvalidCapturePatternThrows) {
  // Compiled alone, a pattern cannot close the capture group early.
  auto e = error_of("dim {q_head} end", {}, {{"q_head", "\\d+)|(.*"}});
  EXPECT_NE(std::string(e.what()).find("the pattern for 'q_head' is not a valid regex"), std::string::npos);
  e = error_of("dim {q_head} end", {}, {{"q_head", ""}});
  EXPECT_STREQ(e.what(), "capture_patterns: the pattern for 'q_head' is empty");
}

TEST(Template, NoLiteralTextThrows) {
  for (const char* tmpl : {"{}", "{a}{b}", "%s", "{x} {y}"}) {
    const auto e = error_of(tmpl);
    EXPECT_EQ(e.offset, 0u) << tmpl;
    EXPECT_STREQ(e.what(),
                 "template has no literal text, only placeholders and blanks: it would match "
                 "almost any line")
        << tmpl;
  }
  EXPECT_STREQ(error_of("").what(), "template is empty");
}

}  // namespace
}  // namespace errshim::detail
