#include "matcher.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>

#include <fmt/format.h>

namespace errshim::detail {

namespace {
constexpr auto kSyntax = boost::regex::perl;
// '.' never crosses a line: an error message is matched within its lines.
const auto kSearch = boost::match_default | boost::match_not_dot_newline;

std::string trim_right(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}
}  // namespace

std::size_t literal_length(std::string_view re) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    bool literal = false;
    std::size_t atom_end = i;
    if (c == '\\' && i + 1 < re.size()) {
      const char n = re[i + 1];
      literal = !std::isalnum(static_cast<unsigned char>(n)) || n == '0';
      atom_end = i + 1;
    } else if (c == '[') {
      // Skip a character class: it matches one of several characters.
      std::size_t j = i + 1;
      if (j < re.size() && re[j] == '^') ++j;
      if (j < re.size() && re[j] == ']') ++j;
      while (j < re.size() && re[j] != ']') j += (re[j] == '\\') ? 2 : 1;
      atom_end = j;
    } else if (c == '(' && i + 1 < re.size() && re[i + 1] == '?') {
      // Group syntax such as (?<name> or (?: carries no literal text.
      std::size_t j = i + 2;
      if (j < re.size() && (re[j] == '<' || re[j] == '\'' || re[j] == 'P')) {
        while (j < re.size() && re[j] != '>' && re[j] != '\'') ++j;
      }
      atom_end = j;
    } else {
      literal = std::string_view("()|*+?{}.^$").find(c) == std::string_view::npos;
    }
    // An atom followed by ?, * or {0, may be absent from a match.
    const std::size_t next = atom_end + 1;
    const bool optional = next < re.size() &&
                          (re[next] == '?' || re[next] == '*' || re.substr(next, 3) == "{0,");
    if (literal && !optional) ++count;
    i = atom_end;
  }
  return count;
}

Matcher::Matcher(std::vector<std::shared_ptr<const Entry>> entries, std::vector<Problem>& problems)
    : entries_(std::move(entries)) {
  compiled_.resize(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = *entries_[i];
    Compiled& c = compiled_[i];
    try {
      c.re.assign(e.pattern, kSyntax);
    } catch (const boost::regex_error& err) {
      problems.push_back({e.where, e.id,
                          fmt::format("pattern does not compile: {} (at character {} of '{}')", err.what(),
                                      err.position() + 1, e.pattern)});
    }
    for (const std::string& u : e.unless) {
      try {
        c.unless.emplace_back(u, kSyntax);
      } catch (const boost::regex_error& err) {
        problems.push_back({e.where, e.id,
                            fmt::format("'unless' pattern does not compile: {} (at character {} of '{}')", err.what(),
                                        err.position() + 1, u)});
      }
    }
    c.specificity = literal_length(e.pattern);
  }
}

bool Matcher::search(std::size_t index, const std::string& text, boost::smatch& m,
                     std::vector<std::string>* problems) const {
  const Compiled& c = compiled_[index];
  try {
    if (!boost::regex_search(text, m, c.re, kSearch)) return false;
    for (const boost::regex& u : c.unless) {
      boost::smatch um;
      if (boost::regex_search(text, um, u, kSearch)) return false;
    }
    return true;
  } catch (const std::exception& err) {
    // Boost gives up on runaway backtracking by throwing; to the host that
    // is this entry not matching, and a report.
    if (problems) problems->push_back(fmt::format("entry '{}' gave up on this message: {}", entries_[index]->id, err.what()));
    return false;
  }
}

struct Matcher::Hit {
  std::size_t entry = 0;
  std::size_t segment = 0;
  std::size_t position = 0;
  ScopeFit fit = ScopeFit::general;
  boost::smatch m;
};

MatchResult Matcher::match(std::string_view message, const Context& context) const noexcept {
  MatchResult result;
  try {
    const Normalized norm = normalize(message);
    if (norm.truncated)
      result.problems.push_back(fmt::format("message of {} bytes cut to its first and last {} KiB", message.size(),
                                            kMaxInputBytes / 2048));
    std::optional<Hit> best;
    // Smaller key wins: priority (high first), specificity (high first),
    // scope fit (best first), segment (root cause first), position, id.
    auto key = [this](const Hit& h) {
      const Entry& e = *entries_[h.entry];
      return std::make_tuple(-static_cast<long long>(e.priority), -static_cast<long long>(compiled_[h.entry].specificity),
                             -static_cast<int>(h.fit), h.segment, h.position, std::string_view(e.id));
    };
    for (std::size_t s = 0; s < norm.segments.size(); ++s) {
      const std::string& text = norm.segments[s].text;
      for (std::size_t i = 0; i < entries_.size(); ++i) {
        Hit h;
        h.fit = scope_fit(entries_[i]->applies_to, context);
        if (h.fit == ScopeFit::contradicted) continue;
        if (!search(i, text, h.m, &result.problems)) continue;
        h.entry = i;
        h.segment = s;
        h.position = static_cast<std::size_t>(h.m.position(static_cast<std::size_t>(0)));
        if (!best || key(h) < key(*best)) best = std::move(h);
      }
    }
    if (!best) return result;

    const Entry& e = *entries_[best->entry];
    const Segment& seg = norm.segments[best->segment];
    Diagnosis d;
    d.entry = entries_[best->entry];
    for (const std::string& name : e.capture_names) {
      const auto& sub = best->m[name];
      d.captures.push_back({name, sub.matched ? trim_right(sub.str()) : std::string()});
    }
    d.matched = trim_right(best->m[0].str());
    d.segment = seg.text;
    d.exception_class = seg.exception_class;
    d.raw = std::string(message.substr(0, kMaxInputBytes));
    result.diagnosis = std::move(d);
  } catch (const std::exception& err) {
    // Out of memory or similar: the host gets "no match", never an exception.
    result.diagnosis.reset();
    try {
      result.problems.push_back(fmt::format("matching failed: {}", err.what()));
    } catch (...) {
    }
  }
  return result;
}

bool Matcher::claims(std::size_t index, std::string_view message) const noexcept {
  try {
    const Normalized norm = normalize(message);
    for (const Segment& seg : norm.segments) {
      boost::smatch m;
      if (search(index, seg.text, m, nullptr)) return true;
    }
  } catch (...) {
  }
  return false;
}

}  // namespace errshim::detail
