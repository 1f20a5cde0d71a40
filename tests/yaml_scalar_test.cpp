// One YAML scalar rule for the catalog and for configs: a value spelled the
// same way in a catalog fix and in a config resolves to the same Value, so
// a fix's `set` and `conflicts` compare with what the config holds.
#include <gtest/gtest.h>

#include <string>

#include <errshim/catalog.hpp>
#include <errshim/config.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

struct Spelling {
  const char* name;
  const char* text;  // as written after `k: ` in both
  Value::Type type;
};

class YamlScalar : public ::testing::TestWithParam<Spelling> {};

TEST_P(YamlScalar, ACatalogValueAndAConfigValueResolveAlike) {
  const Spelling& p = GetParam();
  const std::string extra = std::string("    remediation:\n      - text: r\n        fix: {set: {k: ") + p.text +
                            "}, safety: safe, reason: same output}\n";
  std::string yaml = testing::entry_yaml("test.scalar", "scalar rule", "");
  // Replace the entry's remediation with one whose fix sets k.
  yaml.replace(yaml.find("    remediation:\n      - text: r\n"),
               std::string("    remediation:\n      - text: r\n").size(), extra);
  const CatalogPtr c = testing::catalog_from(testing::file_yaml(yaml));
  const Value& from_catalog = c->entries().front()->remediation.front().fix->set.front().second;
  const ConfigTree config = ConfigTree::parse(std::string("k: ") + p.text + "\n");
  const std::optional<Value> from_config = config.get({"k"});
  ASSERT_TRUE(from_config);
  EXPECT_EQ(from_catalog.type, p.type);
  EXPECT_EQ(from_config->type, p.type);
  EXPECT_EQ(from_catalog, *from_config);
}

INSTANTIATE_TEST_SUITE_P(Spellings, YamlScalar,
                         ::testing::Values(Spelling{"TitleCaseTrue", "True", Value::Type::boolean},
                                           Spelling{"UpperFalse", "FALSE", Value::Type::boolean},
                                           Spelling{"SignedInt", "+7", Value::Type::integer},
                                           Spelling{"NegativeInt", "-12", Value::Type::integer},
                                           Spelling{"LeadingDotFloat", ".5", Value::Type::number},
                                           Spelling{"TrailingDotFloat", "3.", Value::Type::number},
                                           Spelling{"Exponent", "1e-3", Value::Type::number},
                                           Spelling{"YamlOneOneYesIsAString", "yes", Value::Type::string},
                                           Spelling{"HexIsAString", "0x1F", Value::Type::string},
                                           Spelling{"QuotedFalseIsAString", "'false'", Value::Type::string},
                                           Spelling{"QuotedIntIsAString", "\"8\"", Value::Type::string},
                                           Spelling{"ExponentWithoutDigitsIsAString", "1e", Value::Type::string}),
                         [](const ::testing::TestParamInfo<Spelling>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace errshim
