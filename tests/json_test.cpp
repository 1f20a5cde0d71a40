// The one JSON writer: its quoting rule, and one shape of each type wherever
// it is written (a fix in the audit record and in a diagnosis / explain --json).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "errshim/importer.hpp"
#include "errshim/remediation.hpp"
#include "errshim/render.hpp"
#include "json.hpp"
#include "json_writer.hpp"
#include "test_catalogs.hpp"

namespace {

using errshim::detail::json_quote;

struct QuoteCase {
  const char* name;
  std::string in;
  std::string out;  // the literal, quotes included
};

class JsonQuote : public ::testing::TestWithParam<QuoteCase> {};

TEST_P(JsonQuote, FollowsTheOneRule) { EXPECT_EQ(json_quote(GetParam().in), GetParam().out); }

TEST_P(JsonQuote, IsValidJsonThatReadsBackAsTheTextOrItsReplacement) {
  // A strict reader accepts every output; what it reads is the input with
  // each invalid byte replaced by U+FFFD.
  const auto back = nlohmann::json::parse(json_quote(GetParam().in));
  ASSERT_TRUE(back.is_string());
  EXPECT_EQ(back.get<std::string>(), nlohmann::json::parse(GetParam().out).get<std::string>());
}

const std::string kFffd = "\xEF\xBF\xBD";

INSTANTIATE_TEST_SUITE_P(
    Cases, JsonQuote,
    ::testing::Values(
        QuoteCase{"Empty", "", "\"\""},
        QuoteCase{"PrintableAsciiAsIs", "plain text: a/b {x} 1.5", "\"plain text: a/b {x} 1.5\""},
        QuoteCase{"QuoteAndBackslashEscaped", "a\"b\\c", R"("a\"b\\c")"},
        QuoteCase{"NewlineTabReturnShort", "a\nb\tc\rd", R"("a\nb\tc\rd")"},
        QuoteCase{"BackspaceFormFeedShort", "a\bb\fc", R"("a\bb\fc")"},
        QuoteCase{"OtherControlsAsU00XX", std::string("\x01\x1b[31m\x1f", 7), R"("\u0001\u001b[31m\u001f")"},
        QuoteCase{"NulEscaped", std::string("a\0b", 3), R"("a\u0000b")"},
        QuoteCase{"DeleteEscaped",
                  "a\x7f"
                  "b",
                  R"("a\u007fb")"},
        QuoteCase{"TwoByteUtf8Kept", "caf\xC3\xA9", "\"caf\xC3\xA9\""},
        QuoteCase{"ThreeByteUtf8Kept", "\xE6\x97\xA5\xE6\x9C\xAC", "\"\xE6\x97\xA5\xE6\x9C\xAC\""},
        QuoteCase{"FourByteUtf8Kept", "\xF0\x9F\x94\xA5", "\"\xF0\x9F\x94\xA5\""},
        QuoteCase{"LineSeparatorKept",
                  "a\xE2\x80\xA8"
                  "b",
                  "\"a\xE2\x80\xA8"
                  "b\""},
        QuoteCase{"InvalidByteReplaced", "bad\xFF!", "\"bad" + kFffd + "!\""},
        QuoteCase{"LoneContinuationReplaced", "\x80", "\"" + kFffd + "\""},
        QuoteCase{"TruncatedSequenceReplacedByteByByte", "\xE6\x97", "\"" + kFffd + kFffd + "\""},
        QuoteCase{"SurrogateReplaced", "\xED\xA0\x80", "\"" + kFffd + kFffd + kFffd + "\""},
        QuoteCase{"OverlongReplaced", "\xC0\xAF", "\"" + kFffd + kFffd + "\""},
        QuoteCase{"PastU10FFFFReplaced", "\xF4\x90\x80\x80", "\"" + kFffd + kFffd + kFffd + kFffd + "\""}),
    [](const ::testing::TestParamInfo<QuoteCase>& info) { return std::string(info.param.name); });

TEST(JsonWriter, SeparatesItemsWithCommaSpaceAndKeysWithColonSpace) {
  std::string out;
  errshim::detail::JsonWriter w(out);
  w.begin_object().field("a", 1).key("b").begin_array().number(1).string("x").begin_object().end_object().end_array();
  w.key("c").null().field("d", true).key("e").begin_array().end_array().end_object();
  EXPECT_EQ(out, R"({"a": 1, "b": [1, "x", {}], "c": null, "d": true, "e": []})");
}

// A fix with every member: set, remove, action, requires, conflicts, safety, reason.
const std::string kFullFixEntry = errshim::testing::file_yaml(
    errshim::testing::entry_upto_examples_yaml("test.json.fix", "the gizmo is at {level} percent") +
    "        fix:\n"
    "          set: {gizmo: 1}\n"
    "          remove: [turbo]\n"
    "          requires: {cache: false}\n"
    "          conflicts: {use_flash_attn: true}\n"
    "          safety: slower\n"
    "          reason: 'same output,\n"
    "            slower'\n"
    "    examples: {match: ['the gizmo is at 99 percent']}\n");

TEST(JsonShape, AFixIsWrittenTheSameInTheAuditRecordAsInADiagnosis) {
  // The audit record used to write its own fix: set and requires merged,
  // no conflicts, no reason, the safety outside.
  const auto catalog = errshim::testing::catalog_from(kFullFixEntry);
  const auto d = catalog->diagnose("the gizmo is at 99 percent");
  ASSERT_TRUE(d);
  const auto diagnosis = nlohmann::json::parse(errshim::to_json(*d));
  const auto& in_diagnosis = diagnosis.at("remediation").at(0).at("fix");

  errshim::Decision decision;
  decision.entry_id = d->id();
  decision.step = 0;
  decision.fix = d->entry->remediation[0].fix;
  decision.outcome = errshim::Decision::Outcome::suggested;
  const auto audit = nlohmann::json::parse(decision.to_json());
  EXPECT_EQ(audit.at("fix"), in_diagnosis) << decision.to_json();
  EXPECT_EQ(audit.at("safety"), "slower");
  EXPECT_EQ(in_diagnosis.at("requires"), nlohmann::json::parse(R"({"cache": false})"));
  EXPECT_EQ(in_diagnosis.at("conflicts"), nlohmann::json::parse(R"({"use_flash_attn": true})"));
  EXPECT_EQ(in_diagnosis.at("reason"), "same output, slower");
}

TEST(JsonShape, ExplainJsonWritesTheFixAsTheAuditRecordDoes) {
  const auto path =
      std::filesystem::temp_directory_path() / ("errshim_json_fix." + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << kFullFixEntry;
  std::string out;
  if (FILE* p = ::popen((std::string(ERRSHIM_CLI) + " explain --json --catalog " + path.string() +
                         " 'the gizmo is at 99 percent' 2>/dev/null")
                            .c_str(),
                        "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  std::filesystem::remove(path);
  const auto explained = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(explained.is_discarded()) << out;
  ASSERT_EQ(explained.value("id", ""), "test.json.fix") << out;

  const auto catalog = errshim::testing::catalog_from(kFullFixEntry);
  errshim::Decision decision;
  decision.entry_id = "test.json.fix";
  decision.step = 0;
  decision.fix = catalog->diagnose("the gizmo is at 99 percent")->entry->remediation[0].fix;
  EXPECT_EQ(nlohmann::json::parse(decision.to_json()).at("fix"), explained.at("remediation").at(0).at("fix")) << out;
}

TEST(JsonShape, ScanBlockIsTheDiagnosisObjectWithTheBlockMembersAfter) {
  const auto catalog = errshim::testing::catalog_from(kFullFixEntry);
  errshim::ScanBlock b;
  b.file = "log\xFF.txt";
  b.line = 7;
  b.lines = 2;
  b.text = "the gizmo is at 99 percent";
  b.diagnosis = catalog->diagnose(b.text);
  ASSERT_TRUE(b.diagnosis);
  const std::string block = errshim::to_json(b), alone = errshim::to_json(*b.diagnosis);
  EXPECT_EQ(block.substr(0, alone.size() - 1), alone.substr(0, alone.size() - 1));
  EXPECT_EQ(block.substr(alone.size() - 1), ", \"file\": \"log" + kFffd +
                                                ".txt\", \"line\": 7, \"lines\": 2, \"kind\": \"" +
                                                std::string(errshim::to_string(b.kind)) + "\"}");
}

struct BrokenJson {
  const char* name;
  std::string input;
  std::string where;  // the start of the error message: line and column of the last byte read (the
                      // offending token's end)
};

class ImporterReadsJson : public ::testing::TestWithParam<BrokenJson> {};

TEST_P(ImporterReadsJson, SaysWhereTheInputIsNotJson) {
  std::string message = "(no error)";
  try {
    errshim::import_records(GetParam().input, "in.json");
  } catch (const errshim::import_error& e) {
    message = e.what();
  }
  EXPECT_EQ(message.rfind(GetParam().where, 0), 0u) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ImporterReadsJson,
    ::testing::Values(BrokenJson{"ValueMissingOnLineThree", "[\n  {\"id\": \"r1\",\n   \"repo\": }\n]",
                                 "in.json:3:12: not valid JSON: syntax error"},
                      BrokenJson{"CutShortOnTheFirstLine", "{\"record\": {\"id\": ", "in.json:1:"},
                      BrokenJson{"ThirdJsonLineBroken", "{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"id\" \"c\"}\n",
                                 "in.json:3:9: not valid JSON"},
                      BrokenJson{"InvalidUtf8InAString", "{\"id\": \"a\xff\"}", "in.json:1:"},
                      // nlohmann reports a number no double holds as out_of_range, not
                      // as a parse error (a fuzz finding: it escaped the importer).
                      BrokenJson{"ANumberTooLargeForADouble", "{\"id\": \"a\",\n \"schemaVersion\": 2e67013597}",
                                 "in.json:2:19: not valid JSON: number overflow parsing '2e67013597'"}),
    [](const ::testing::TestParamInfo<BrokenJson>& info) { return std::string(info.param.name); });

}  // namespace
