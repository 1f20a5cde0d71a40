// The three call styles: wrap a callable, translate in catch (...), diagnose
// a string. Matched errors are enriched with the original nested; anything
// else passes through as it was.
#include <gtest/gtest.h>

#include <stdexcept>

#include <errshim/errshim.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

struct layer_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

CatalogPtr cat() {
  static const CatalogPtr c = catalog_from(file_yaml(entry_yaml("lib.kv", "kv_cache_enabled=true is not supported")));
  return c;
}

TEST(Guard, ReturnsTheValueOnTheHappyPath) {
  EXPECT_EQ(guard([] { return 42; }, *cat()), 42);
  int n = 0;
  guard([&] { ++n; }, *cat());
  EXPECT_EQ(n, 1);
}

TEST(Guard, MatchedErrorBecomesTranslatedErrorWithOriginalNested) {
  try {
    guard([]() -> int { throw layer_error("Error: kv_cache_enabled=true is not supported"); }, *cat());
    FAIL() << "should throw";
  } catch (const translated_error& e) {
    EXPECT_EQ(e.id(), "lib.kv");
    EXPECT_STREQ(e.what(), "lib.kv: kv_cache_enabled=true is not supported -- try: r");
    // Reachable both ways: rethrow_if_nested and original().
    EXPECT_THROW(std::rethrow_if_nested(e), layer_error);
    try {
      std::rethrow_exception(e.original());
    } catch (const layer_error& orig) {
      EXPECT_STREQ(orig.what(), "Error: kv_cache_enabled=true is not supported");
    }
  }
}

TEST(Guard, TranslatedErrorIsCatchableAsRuntimeError) {
  EXPECT_THROW(guard([] { throw layer_error("kv_cache_enabled=true is not supported"); }, *cat()), std::runtime_error);
}

TEST(Guard, UnmatchedErrorIsRethrownWithItsOwnType) {
  try {
    guard([] { throw std::out_of_range("index 9 out of range"); }, *cat());
    FAIL() << "should throw";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "index 9 out of range");
  } catch (...) {
    FAIL() << "type changed";
  }
}

TEST(Guard, UnmatchedErrorKeepsItsIdentity) {
  // The very exception object comes back, not a copy of a base class.
  auto original = std::make_exception_ptr(layer_error("something else"));
  try {
    guard([&] { std::rethrow_exception(original); }, *cat());
  } catch (const layer_error&) {
    EXPECT_EQ(std::current_exception(), original);
  }
}

TEST(Guard, NonStdThrowPassesThrough) {
  EXPECT_THROW(guard([] { throw 7; }, *cat()), int);
  struct plain {};
  EXPECT_THROW(guard([] { throw plain{}; }, *cat()), plain);
}

TEST(Guard, AlreadyTranslatedErrorIsNotTranslatedTwice) {
  try {
    guard([] { guard([] { throw layer_error("kv_cache_enabled=true is not supported"); }, *cat()); }, *cat());
  } catch (const translated_error& e) {
    EXPECT_THROW(std::rethrow_if_nested(e), layer_error);  // not translated_error inside translated_error
  }
}

TEST(Guard, ContextSelectsTheScopedEntry) {
  const auto scoped = testing::catalog_from(testing::file_yaml(
      testing::entry_yaml("lib.general", "cache dtype mismatch") +
      testing::entry_yaml("lib.kv", "cache dtype mismatch", "    applies_to: {component: kv-cache}\n")));
  auto fail = [] { throw layer_error("cache dtype mismatch"); };
  try {
    guard(fail, *scoped, Context::parse("component=kv-cache"));
  } catch (const translated_error& e) {
    EXPECT_EQ(e.id(), "lib.kv");
  }
  try {
    guard(fail, *scoped);
  } catch (const translated_error& e) {
    EXPECT_EQ(e.id(), "lib.general");
  }
}

TEST(RethrowTranslated, TranslatesInsideCatchAll) {
  try {
    try {
      throw layer_error("kv_cache_enabled=true is not supported");
    } catch (...) {
      rethrow_translated(*cat());
    }
  } catch (const translated_error& e) {
    EXPECT_EQ(e.id(), "lib.kv");
    EXPECT_THROW(std::rethrow_if_nested(e), layer_error);
  }
}

TEST(RethrowTranslated, RethrowsUnknownUnchanged) {
  try {
    try {
      throw std::invalid_argument("nope");
    } catch (...) {
      rethrow_translated(*cat());
    }
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "nope");
  }
}

TEST(RethrowTranslated, OutsideACatchBlockIsALogicError) { EXPECT_THROW(rethrow_translated(*cat()), std::logic_error); }

TEST(RethrowTranslated, ReadsNestedCausesOfTheOriginal) {
  // A host wrapper that nests the layer's error: the cause is what matches.
  try {
    try {
      try {
        throw layer_error("kv_cache_enabled=true is not supported");
      } catch (...) {
        std::throw_with_nested(std::runtime_error("model construction failed"));
      }
    } catch (...) {
      rethrow_translated(*cat());
    }
  } catch (const translated_error& e) {
    EXPECT_EQ(e.id(), "lib.kv");
  }
}

TEST(Diagnose, StringStyleReturnsOptionalAndNeverThrows) {
  const auto d = diagnose("2026-11-30 10:01:42 ERROR kv_cache_enabled=true is not supported", *cat());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "lib.kv");
  EXPECT_FALSE(diagnose("all good", *cat()));
  EXPECT_FALSE(diagnose(std::string("\0\xff\xfe binary", 10), *cat()));
}

TEST(ExceptionText, JoinsNestedChain) {
  try {
    try {
      throw std::runtime_error("inner");
    } catch (...) {
      std::throw_with_nested(std::runtime_error("outer"));
    }
  } catch (...) {
    EXPECT_EQ(exception_text(std::current_exception()), "outer\nCaused by: inner");
  }
  EXPECT_EQ(exception_text(std::make_exception_ptr(5)), "");
}

}  // namespace
}  // namespace errshim
