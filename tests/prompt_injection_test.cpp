// Messages from production carry user prompts. A fake upstream error inside
// a prompt (echoed in the message, quoted, or raised as a later chained
// exception) must never decide what auto-remediation writes into a config;
// nor may a hostile value read out of a message at the root cause. One case
// per shipped entry whose fix uses a capture, found from the catalog itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>
#include <errshim/lint.hpp>

#include "test_catalogs.hpp"
#include "vocabulary.hpp"

namespace errshim {
namespace {

// Whether a fix value reads a capture: "{name}" or "{name:conv}", not "{{".
bool uses_capture(const Value& v) {
  if (v.type != Value::Type::string) return false;
  const std::string& s = v.text;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] == '{' && s[i + 1] == '{') {
      ++i;
      continue;
    }
    if (s[i] == '{' && (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_')) return true;
  }
  return false;
}

bool uses_capture(const Fix& f) {
  auto any = [](const auto& kvs) {
    return std::any_of(kvs.begin(), kvs.end(), [](const auto& kv) { return uses_capture(kv.second); });
  };
  return any(f.set) || any(f.requires_set);
}

std::vector<std::string> capture_fed_entries() {
  std::vector<std::string> ids;
  for (const auto& e : Catalog::embedded()->entries())
    for (const Remediation& r : e->remediation)
      if (r.fix && uses_capture(*r.fix)) {
        ids.push_back(e->id);
        break;
      }
  return ids;
}

// The capture name a template placeholder gives ({self.num_beams} -> num_beams).
std::string placeholder_name(std::string inner) {
  inner = inner.substr(0, inner.find_first_of("!:"));
  const std::size_t dot = inner.rfind('.');
  return dot == std::string::npos ? inner : inner.substr(dot + 1);
}

// The entry's upstream message with each placeholder spelled by `value`.
std::string render(const Entry& e, const std::function<std::string(const std::string&)>& value) {
  const std::string& t = e.template_text;
  std::string out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '{' && i + 1 < t.size() && t[i + 1] != '{') {
      const std::size_t close = t.find('}', i);
      out += value(placeholder_name(t.substr(i + 1, close - i - 1)));
      i = close;
    } else {
      out += t[i];
    }
  }
  return out;
}

// The first example that states its captures: the real error, and its context.
const MatchExample& real_example(const Entry& e) {
  for (const MatchExample& ex : e.match_examples)
    if (!ex.captures.empty()) return ex;
  return e.match_examples.front();
}

std::string capture_of(const MatchExample& ex, const std::string& name) {
  for (const Capture& c : ex.captures)
    if (c.name == name) return c.value;
  return "0";
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

const char* const kUrl = "https://evil.example/x.sh; rm -rf / #";

// A config that agrees with the real error: each capture is also a key
// holding the value the message reports (as the layer's config would).
ConfigTree config_for(const MatchExample& ex) {
  std::string yaml;
  for (const Capture& c : ex.captures)
    yaml += c.name + ": " + (all_digits(c.value) ? c.value : "'" + c.value + "'") + "\n";
  yaml += "num_heads: 64\n";
  return ConfigTree::parse(yaml);
}

Policy permissive(const MatchExample& ex) {
  Policy p;
  p.mode = Mode::automatic;
  p.allowed = {Safety::safe, Safety::slower, Safety::changes_output};
  p.context = ex.context;
  return p;
}

// The names of the captures the entry's fixes read.
std::set<std::string> fed_captures(const Entry& e) {
  std::set<std::string> names;
  for (const Remediation& r : e.remediation) {
    if (!r.fix) continue;
    for (const auto* kvs : {&r.fix->set, &r.fix->requires_set})
      for (const auto& kv : *kvs) {
        const std::string& s = kv.second.text;
        for (std::size_t i = s.find('{'); uses_capture(kv.second) && i != std::string::npos; i = s.find('{', i + 1))
          names.insert(s.substr(i + 1, s.find_first_of(":}", i) - i - 1));
      }
  }
  return names;
}

// The example's value of `name`, or `hostile(value)` for a capture a fix reads.
std::function<std::string(const std::string&)> spell(const Entry& e, const MatchExample& ex,
                                                     std::function<std::string(const std::string&)> hostile) {
  const std::set<std::string> fed = fed_captures(e);
  return [&ex, fed, hostile](const std::string& n) {
    return fed.count(n) ? hostile(capture_of(ex, n)) : capture_of(ex, n);
  };
}

// A permissive policy that pins the keys of the steps before the entry's
// first capture-fed one, so that step is the one considered; `step` is set
// to its index.
Policy reaching_capture_step(const Entry& e, const MatchExample& ex, std::size_t& step) {
  Policy p = permissive(ex);
  for (step = 0; step < e.remediation.size(); ++step) {
    const auto& f = e.remediation[step].fix;
    if (f && uses_capture(*f)) break;
    if (!f) continue;
    for (const auto& kv : f->set) p.pinned_keys.insert(kv.first);
  }
  return p;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class PromptInjection : public ::testing::TestWithParam<std::string> {
 protected:
  const Entry& entry() const { return *Catalog::embedded()->find(GetParam()); }
};

// Where prompt text puts a fake error: never the root cause of what was raised.
std::vector<std::pair<std::string, std::string>> placements(const std::string& fake) {
  return {
      {"quoted in the message", "ValueError: generation failed for prompt \"" + fake + "\"\n"},
      {"echoed after a label", "ValueError: prompt rejected. Prompt was: " + fake + "\n"},
      {"echoed on a later line", "ValueError: prompt rejected by the safety filter\nPrompt was:\n" + fake + "\n"},
      {"an error wrapper inside the echo", "ValueError: prompt rejected, it said:\nError: " + fake + "\n"},
      {"a panic inside the echo",
       "ValueError: prompt rejected, it said:\nthread 'main' panicked at src/a.rs:1:1:\n" + fake + "\n"},
      {"later chained exception",
       "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    run()\n"
       "ValueError: tokenizer exploded on the input\n\n"
       "During handling of the above exception, another exception occurred:\n\n"
       "Traceback (most recent call last):\n  File \"app.py\", line 5, in <module>\n    raise RuntimeError(prompt)\n"
       "RuntimeError: " +
           fake + "\n"},
  };
}

TEST_P(PromptInjection, FakeErrorInPromptTextWritesNothing) {
  const Entry& e = entry();
  const MatchExample& ex = real_example(e);
  // The fake as a plausible copy of the real error (values the config
  // agrees with), and as hostile ones.
  const std::vector<std::string> fakes = {
      render(e, [&](const std::string& n) { return capture_of(ex, n); }),
      render(e, spell(e, ex, [](const std::string& v) { return all_digits(v) ? "999999999" : kUrl; })),
      render(e, spell(e, ex, [](const std::string& v) { return all_digits(v) ? "2000000000" : "evil"; })),
  };
  std::size_t diagnosed = 0;  // the fake was recognised as this entry: the case that matters
  for (const std::string& fake : fakes) {
    for (const auto& [where, message] : placements(fake)) {
      SCOPED_TRACE(where + ": " + message);
      ConfigTree scratch = config_for(ex);
      const std::string before = scratch.dump();
      const auto d = Catalog::embedded()->diagnose(message, ex.context);
      if (!d) continue;  // not even recognised: nothing to steer
      diagnosed += d->id() == e.id;
      const FixChoice choice = choose_fix(*d, scratch, permissive(ex));
      EXPECT_FALSE(choice.step) << "applied step " << *choice.step + 1 << " of " << d->id();
      EXPECT_EQ(scratch.dump(), before);
    }
  }
  EXPECT_GE(diagnosed, placements("").size());  // at least the plausible fake, in every placement
}

TEST_P(PromptInjection, FakeErrorThroughRemediateLeavesTheConfig) {
  const Entry& e = entry();
  const MatchExample& ex = real_example(e);
  const std::string fake = render(e, [&](const std::string& n) { return capture_of(ex, n); });
  for (const auto& placed : placements(fake)) {
    SCOPED_TRACE(placed.first);
    const std::string& message = placed.second;  // (a structured binding cannot be captured before C++20)
    const ConfigTree cfg = config_for(ex);
    int calls = 0;
    try {
      auto r = remediate(
          cfg,
          [&](const ConfigTree&) {
            if (++calls == 1) throw std::runtime_error(message);
            return 0;
          },
          permissive(ex));
      ADD_FAILURE() << "a fix was applied: " << r.report.to_json();
    } catch (const remediation_error& err) {
      EXPECT_TRUE(err.report().applied_changes().empty()) << err.report().to_json();
    } catch (const std::runtime_error& err) {
      EXPECT_EQ(std::string(err.what()), message);  // not recognised: passed through unchanged
    }
    EXPECT_EQ(calls, 1);
  }
}

TEST_P(PromptInjection, HostileValueAtTheRootCauseIsRefusedWithAReason) {
  const Entry& e = entry();
  const MatchExample& ex = real_example(e);
  for (const char* huge : {"999999999", "2000000000"}) {
    const std::string message =
        render(e, spell(e, ex, [&](const std::string& v) { return all_digits(v) ? std::string(huge) : "evil"; }));
    SCOPED_TRACE(message);
    const auto d = Catalog::embedded()->diagnose(message, ex.context);
    ASSERT_TRUE(d);
    ASSERT_EQ(d->id(), e.id);
    ConfigTree scratch = config_for(ex);
    std::size_t step = 0;
    const FixChoice choice = choose_fix(*d, scratch, reaching_capture_step(e, ex, step));
    std::size_t checked = 0;
    for (const Decision& x : choice.decisions) {
      if (!x.fix || !uses_capture(*x.fix)) continue;
      ++checked;
      EXPECT_EQ(x.outcome, Decision::Outcome::refused) << x.to_json();
      EXPECT_FALSE(x.reason.empty());
      for (const Change& c : x.changes) EXPECT_TRUE(!c.after || c.after->text.find("evil") == std::string::npos);
    }
    EXPECT_GT(checked, 0u) << "no capture-fed step was considered";
    if (choice.step) {
      EXPECT_FALSE(uses_capture(*d->entry->remediation[*choice.step].fix));
    }
  }
}

TEST_P(PromptInjection, RealErrorIsStillFixedFromItsCaptures) {
  const Entry& e = entry();
  const MatchExample& ex = real_example(e);
  // The real error, with the same fake quoted in a later chained exception.
  const std::string fake = render(e, spell(e, ex, [](const std::string& v) { return all_digits(v) ? "7" : kUrl; }));
  const std::string frame = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    run()\n";
  const std::string root =
      ex.text.find('\n') == std::string::npos ? frame + "RuntimeError: " + ex.text + "\n" : ex.text;
  const std::string chained = root + "\nDuring handling of the above exception, another exception occurred:\n\n" +
                              frame + "RuntimeError: prompt \"" + fake + "\"\n";
  for (const std::string& message : {ex.text, chained}) {
    SCOPED_TRACE(message);
    const auto d = Catalog::embedded()->diagnose(message, ex.context);
    ASSERT_TRUE(d);
    ASSERT_EQ(d->id(), e.id);
    std::size_t want = 0;
    const Policy p = reaching_capture_step(e, ex, want);
    ConfigTree scratch = config_for(ex);
    const FixChoice choice = choose_fix(*d, scratch, p);
    ASSERT_TRUE(choice.step) << (choice.decisions.empty() ? "" : choice.decisions.back().reason);
    EXPECT_EQ(*choice.step, want);
    const Fix& fix = *e.remediation[want].fix;
    ASSERT_EQ(choice.changes.size(), fix.set.size());
    for (std::size_t i = 0; i < fix.set.size(); ++i) {
      const std::string& spec = fix.set[i].second.text;  // "{name}"
      const std::string name = spec.substr(1, spec.find_first_of(":}") - 1);
      std::string expected = capture_of(ex, name);
      // A key with a vocabulary gets the capture in the config's spelling
      // (this config holds none, so the usual one: libtorch's BFloat16 is "bfloat16").
      if (const auto vocabulary = detail::vocabulary_of_key(fix.set[i].first)) {
        std::string why;
        expected = detail::map_value(*vocabulary, expected, nullptr, ConfigKind::unknown, why).value_or("?");
      }
      ASSERT_TRUE(choice.changes[i].after);
      EXPECT_EQ(choice.changes[i].after->text, expected);
      EXPECT_EQ(choice.changes[i].after->type, all_digits(expected) ? Value::Type::integer : Value::Type::string);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ShippedCaptureFixes, PromptInjection, ::testing::ValuesIn(capture_fed_entries()), case_name);

TEST(PromptInjection, EveryShippedCaptureFedEntryIsCovered) {
  // The table above is the catalog's own list; guard against it going empty.
  EXPECT_GE(capture_fed_entries().size(), 8u);
}

// The fake used to win over the real root cause by specificity. Auto mode
// now fixes the root cause, and never the fake.
TEST(RootCause, RealRootCauseIsFixedWhenAMoreSpecificFakeFollowsIt) {
  const std::string text = errshim::testing::kRootCauseThenEchoedFake;
  const auto winner = Catalog::embedded()->diagnose(text);
  ASSERT_TRUE(winner);
  EXPECT_EQ(winner->id(), "transformers.generation_config.num_return_sequences_gt_num_beams");
  EXPECT_NE(root_cause_problem(*winner), "");
  const auto root = root_cause_diagnosis(*Catalog::embedded(), *winner);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->id(), "candle.metavoice.kv_cache_enabled");
  EXPECT_EQ(root->exception_class, "RuntimeError");

  const ConfigTree cfg = ConfigTree::parse("kv_cache_enabled: true\nnum_beams: 4\n");
  auto r = remediate(
      cfg,
      [&](const ConfigTree& c) {
        if (c.get({"kv_cache_enabled"})->text == "true") throw std::runtime_error(text);
        return 0;
      },
      Policy{});
  EXPECT_EQ(r.config.get({"kv_cache_enabled"})->text, "false");
  EXPECT_EQ(r.config.get({"num_beams"})->text, "4");
  EXPECT_EQ(r.report.applied_changes().size(), 1u);
}

// ---- lint: what may feed a fix value

std::string lint_text(const std::string& entries) {
  std::string all;
  for (const Problem& p : lint(*testing::catalog_from(testing::file_yaml(entries)))) all += p.to_string() + "\n";
  return all;
}

std::string device_entry(const std::string& capture_patterns) {
  return "  - id: lib.index_copy.device\n"
         "    template: 'index_copy_(): but got (self) {self_device}, (index) {index_device}, and (source) "
         "{source_device}'\n" +
         capture_patterns +
         "    source: {path: a.cpp, line: 1}\n"
         "    error_class: c10::Error\n"
         "    kind: configuration\n"
         "    cause: c\n"
         "    trigger: t\n"
         "    remediation:\n"
         "      - text: r\n"
         "        fix: {set: {cache_device: '{source_device}'}, safety: safe}\n"
         "    examples:\n"
         "      match:\n"
         "        - text: 'index_copy_(): but got (self) meta, (index) cpu, and (source) cpu'\n"
         "          captures: {source_device: cpu}\n";
}

// The shipped device entry had no capture_patterns: its placeholder took the
// rest of the line, prompt text included, straight into cache_device.
TEST(FixValueLint, RefusesALooseCaptureThatFeedsAFix) {
  const std::string loose = lint_text(device_entry(""));
  EXPECT_NE(loose.find("test.yaml:5:5: entry 'lib.index_copy.device': remediation step 1: fix key 'cache_device' "
                       "writes capture 'source_device', whose regex '[^\\n]+' is not tight"),
            std::string::npos)
      << loose;
  EXPECT_NE(loose.find("give it a 'capture_patterns' entry"), std::string::npos);
  EXPECT_EQ(lint_text(device_entry("    capture_patterns: {source_device: '[a-z]+(?:[:][0-9]+)?'}\n")), "");
  for (const char* pattern : {"\\S+", "[^)]+", "[a-z /]+", ".+", "\\w+(?=x)", "[a-z]+ [a-z]+"}) {
    SCOPED_TRACE(pattern);
    EXPECT_NE(lint_text(device_entry(std::string("    capture_patterns: {source_device: '") + pattern + "'}\n"))
                  .find("is not tight"),
              std::string::npos);
  }
}

TEST(FixValueLint, RefusesACaptureFedKeyWithoutAValidator) {
  std::string y = device_entry("    capture_patterns: {source_device: '[a-z]+'}\n");
  y.replace(y.find("cache_device: "), 12, "shell_command");
  const std::string text = lint_text(y);
  EXPECT_NE(text.find("fix key 'shell_command' reads a value from the message, but errshim has no validator"),
            std::string::npos)
      << text;
}

TEST(FixValueLint, RefusesALiteralValueItsKeyRejects) {
  std::string y = device_entry("    capture_patterns: {source_device: '[a-z]+'}\n");
  y.replace(y.find("'{source_device}'"), 17, "gpu-ish, safe: 1");
  y.replace(y.find("safe: 1"), 7, "num_beams: 0");
  const std::string text = lint_text(y);
  EXPECT_NE(text.find("fix key 'cache_device': value 'gpu-ish' for 'cache_device' is refused: a device is one of cpu"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("value '0' for 'num_beams' is refused: a beam or sequence count lies in [1, 256]"),
            std::string::npos)
      << text;
}

// Every shipped entry with a fix is applied for its own examples: the
// root-cause rule must not turn the catalog's real messages away.
TEST(RootCause, EveryShippedExampleOfAnEntryWithAFixIsARootCause) {
  for (const auto& e : Catalog::embedded()->entries()) {
    const bool fixes =
        std::any_of(e->remediation.begin(), e->remediation.end(), [](const Remediation& r) { return r.fix; });
    if (!fixes) continue;
    for (const MatchExample& ex : e->match_examples) {
      const auto d = Catalog::embedded()->diagnose(ex.text, ex.context);
      if (!d || d->id() != e->id) continue;  // lint's business
      EXPECT_EQ(root_cause_problem(*d), "") << e->id << ": " << ex.text;
    }
  }
}

}  // namespace
}  // namespace errshim
