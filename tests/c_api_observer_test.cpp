// errshim_observe: a C callback gets every lookup, the entry id or NULL, the
// fingerprint of an unrecognised message, and where the lookup was made.
#include <gtest/gtest.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <errshim/c_api.h>
#include <errshim/fingerprint.hpp>
#include <errshim/guard.hpp>

namespace {

constexpr const char* kQuantized =
    "ValueError: This model does not support the quantized cache. If you want your model to support quantized "
    "cache, please open an issue and tag @zucchini-nlp.";

struct Seen {
  std::string message;
  bool has_id = false;
  std::string id;
  bool has_fingerprint = false;
  std::string fingerprint;
  std::string fingerprint_text;
  int site = -1;
};

struct Log {
  std::mutex mutex;
  std::vector<Seen> seen;
};

void record(const errshim_lookup* l, void* user_data) {
  auto* log = static_cast<Log*>(user_data);
  Seen s;
  s.message.assign(l->message, l->message_length);
  s.has_id = l->entry_id != nullptr;
  if (s.has_id) s.id = l->entry_id;
  s.has_fingerprint = l->fingerprint != nullptr;
  if (s.has_fingerprint) s.fingerprint = l->fingerprint;
  if (l->fingerprint_text != nullptr) s.fingerprint_text = l->fingerprint_text;
  s.site = l->site;
  std::lock_guard<std::mutex> lock(log->mutex);
  log->seen.push_back(std::move(s));
}

struct Observer {
  errshim_observer* p = nullptr;
  ~Observer() { errshim_observer_free(p); }
};

void diagnose(const char* message) {
  errshim_diagnosis* d = nullptr;
  errshim_diagnose(nullptr, message, ERRSHIM_NUL_TERMINATED, nullptr, &d, nullptr);
  errshim_diagnosis_free(d);
}

TEST(CApiObserver, CallbackGetsTheEntryIdOfAMatchAndNoFingerprint) {
  Log log;
  Observer o;
  ASSERT_EQ(errshim_observe(record, &log, &o.p, nullptr), ERRSHIM_OK);
  diagnose(kQuantized);
  ASSERT_EQ(log.seen.size(), 1u);
  EXPECT_TRUE(log.seen[0].has_id);
  EXPECT_EQ(log.seen[0].id, "transformers.generation.quantized_cache_unsupported");
  EXPECT_FALSE(log.seen[0].has_fingerprint);
  EXPECT_EQ(log.seen[0].fingerprint_text, "");
  EXPECT_EQ(log.seen[0].message, kQuantized);
  EXPECT_EQ(log.seen[0].site, ERRSHIM_SITE_C_DIAGNOSE);
}

TEST(CApiObserver, UnrecognisedMessageGetsNullIdAndTheCoreFingerprint) {
  Log log;
  Observer o;
  ASSERT_EQ(errshim_observe(record, &log, &o.p, nullptr), ERRSHIM_OK);
  const char* message = "[rank3]: RuntimeError: shard 17 of the router table went missing";
  diagnose(message);
  ASSERT_EQ(log.seen.size(), 1u);
  EXPECT_FALSE(log.seen[0].has_id);
  ASSERT_TRUE(log.seen[0].has_fingerprint);
  EXPECT_EQ(log.seen[0].fingerprint, errshim::fingerprint(message).id);
  EXPECT_EQ(log.seen[0].fingerprint_text, errshim::fingerprint(message).text);
  EXPECT_EQ(log.seen[0].fingerprint,
            errshim::fingerprint("[rank0]: RuntimeError: shard 2 of the router table went missing").id);
}

TEST(CApiObserver, FixConfigAndCxxGuardLookupsReachTheCallbackWithTheirSite) {
  Log log;
  Observer o;
  ASSERT_EQ(errshim_observe(record, &log, &o.p, nullptr), ERRSHIM_OK);
  errshim_fix* fix = nullptr;
  errshim_fix_config(nullptr, "nothing errshim knows", ERRSHIM_NUL_TERMINATED, nullptr, "{}", ERRSHIM_NUL_TERMINATED,
                     nullptr, nullptr, &fix, nullptr);
  errshim_fix_free(fix);
  EXPECT_THROW(errshim::guard([]() -> int { throw std::out_of_range("nothing errshim knows"); }), std::out_of_range);
  ASSERT_EQ(log.seen.size(), 2u);
  EXPECT_EQ(log.seen[0].site, ERRSHIM_SITE_C_FIX_CONFIG);
  EXPECT_EQ(log.seen[1].site, ERRSHIM_SITE_GUARD);
  EXPECT_EQ(log.seen[1].fingerprint, log.seen[0].fingerprint);
}

TEST(CApiObserver, FreeingTheObserverStopsTheCallbacks) {
  Log log;
  errshim_observer* o = nullptr;
  ASSERT_EQ(errshim_observe(record, &log, &o, nullptr), ERRSHIM_OK);
  diagnose("first");
  errshim_observer_free(o);
  diagnose("second");
  ASSERT_EQ(log.seen.size(), 1u);
  EXPECT_EQ(log.seen[0].message, "first");
  errshim_observer_free(nullptr);  // a no-op
}

TEST(CApiObserver, NullCallbackOrOutIsAnInvalidArgument) {
  errshim_observer* o = nullptr;
  char* error = nullptr;
  EXPECT_EQ(errshim_observe(nullptr, nullptr, &o, &error), ERRSHIM_INVALID_ARGUMENT);
  EXPECT_EQ(o, nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("callback is NULL"), std::string::npos);
  errshim_string_free(error);
  EXPECT_EQ(errshim_observe(record, nullptr, nullptr, nullptr), ERRSHIM_INVALID_ARGUMENT);
}

}  // namespace
