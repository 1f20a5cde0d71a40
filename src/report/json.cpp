#include "json.hpp"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "errshim/fingerprint.hpp"
#include "errshim/raise_site.hpp"
#include "errshim/render.hpp"
#include "render_internal.hpp"

namespace errshim::detail {

namespace {

std::string iso_time(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms);
}

}  // namespace

void write_json(JsonWriter& w, const SourcePin& p) {
  w.begin_object()
      .field("repo", p.repo)
      .field("path", p.path)
      .field("line", p.line)
      .field("commit", p.commit)
      .field("symbol", p.symbol)
      .field("url", source_url(p))
      .end_object();
}

void write_json(JsonWriter& w, const Value& v) {
  switch (v.type) {
    case Value::Type::null: w.null(); return;
    case Value::Type::boolean:
    case Value::Type::integer:
    case Value::Type::number: w.raw(v.text); return;
    case Value::Type::string: w.string(v.text); return;
  }
  w.null();
}

void write_json(JsonWriter& w, const std::optional<Value>& v) {
  if (v)
    write_json(w, *v);
  else
    w.null();
}

void write_json(JsonWriter& w, const std::vector<std::pair<std::string, Value>>& kv) {
  w.begin_object();
  for (const auto& [k, v] : kv) {
    w.key(k);
    write_json(w, v);
  }
  w.end_object();
}

void write_json(JsonWriter& w, const Fix& f) {
  w.begin_object();
  if (!f.set.empty()) write_json(w.key("set"), f.set);
  if (!f.remove.empty()) {
    w.key("remove").begin_array();
    for (const std::string& k : f.remove) w.string(k);
    w.end_array();
  }
  if (!f.action.empty()) w.field("action", f.action);
  if (!f.requires_set.empty()) write_json(w.key("requires"), f.requires_set);
  if (!f.conflicts.empty()) write_json(w.key("conflicts"), f.conflicts);
  w.field("safety", to_string(f.safety));
  if (!f.reason.empty()) w.field("reason", fold_prose(f.reason));
  w.end_object();
}

void write_json(JsonWriter& w, const Change& c) {
  w.begin_object().field("path", to_string(c.path));
  write_json(w.key("before"), c.before);
  write_json(w.key("after"), c.after);
  w.field("created", c.created).end_object();
}

void write_json(JsonWriter& w, const std::vector<Change>& changes) {
  w.begin_array();
  for (const Change& c : changes) write_json(w, c);
  w.end_array();
}

void write_json(JsonWriter& w, const Decision& d) {
  w.begin_object().field("time", iso_time(d.time)).field("attempt", d.attempt).field("entry", d.entry_id);
  if (d.step)
    w.field("step", *d.step);
  else
    w.key("step").null();
  if (d.fix) {
    write_json(w.key("fix"), *d.fix);
    w.field("safety", to_string(d.fix->safety));
  } else {
    w.key("fix").null().key("safety").null();
  }
  w.field("mode", to_string(d.mode)).field("outcome", to_string(d.outcome)).field("reason", d.reason);
  write_json(w.key("changes"), d.changes);
  w.end_object();
}

void write_json_members(JsonWriter& w, const Diagnosis& d) {
  if (!d.entry) {
    w.field("matched", false);
    return;
  }
  const Entry& e = *d.entry;
  w.field("matched", true).field("id", e.id);
  write_json(w.key("source"), e.source);
  w.key("also_at").begin_array();
  for (const SourcePin& p : e.also_at) write_json(w, p);
  w.end_array();
  // Where the message says it was raised, and which pin that confirms.
  const SiteResolution site = resolve_site(d);
  if (!site.stated.empty()) {
    const StatedSite& s = site.stated.front();
    w.key("raised_at")
        .begin_object()
        .field("library", s.library)
        .field("path", s.path)
        .field("line", s.line)
        .field("function", s.function)
        .field("form", s.form)
        .end_object();
  }
  if (site.pin) {
    w.key("site").begin_object();
    write_json(w.key("pin"), *site.pin);
    w.field("fit", site.fit == SiteFit::line ? "line" : "file").end_object();
  }
  w.field("library", e.library).field("error_class", e.error_class).field("kind", e.kind).field("severity", e.severity);
  w.field("cause", fold_prose(e.cause)).field("trigger", fold_prose(e.trigger));
  w.key("remediation").begin_array();
  for (std::size_t i = 0; i < e.remediation.size(); ++i) {
    const Remediation& r = e.remediation[i];
    w.begin_object().field("step", i).field("text", fold_prose(r.text));
    if (r.fix) write_json(w.key("fix"), *r.fix);
    w.end_object();
  }
  w.end_array();
  w.key("captures").begin_object();
  for (const Capture& c : d.captures) w.field(c.name, c.value);
  w.end_object();
  w.field("message", d.segment).field("exception_class", d.exception_class);
}

void write_json(JsonWriter& w, const Diagnosis& d) {
  w.begin_object();
  write_json_members(w, d);
  w.end_object();
}

void write_json(JsonWriter& w, const ScanBlock& b) {
  w.begin_object();
  if (b.diagnosis)
    write_json_members(w, *b.diagnosis);
  else
    w.field("matched", false);
  w.field("file", b.file).field("line", b.line).field("lines", b.lines).field("kind", to_string(b.kind));
  if (!b.diagnosis) {
    const Fingerprint f = fingerprint(b.text);
    w.field("fingerprint", f.id).field("template", f.text).field("text", b.text);
  }
  w.end_object();
}

void write_json_summary(JsonWriter& w, const Entry& e, std::string_view summary) {
  w.begin_object().field("id", e.id).field("library", e.library).field("kind", e.kind);
  write_json(w.key("source"), e.source);
  w.key("tags").begin_array();
  for (const std::string& t : e.tags) w.string(t);
  w.end_array();
  w.field("cause", summary).end_object();
}

std::string json_of_summary(const Entry& entry, std::string_view summary) {
  std::string out;
  JsonWriter w(out);
  write_json_summary(w, entry, summary);
  return out;
}

}  // namespace errshim::detail
