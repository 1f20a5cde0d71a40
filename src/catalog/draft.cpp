// Draft catalog entries: see include/errshim/draft.hpp.
#include "errshim/draft.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "errshim/fingerprint.hpp"
#include "errshim/normalize.hpp"
#include "errshim/raise_site.hpp"
#include "errshim/scan.hpp"
#include "errshim/catalog.hpp"
#include "escape.hpp"

namespace errshim {

namespace {

using sv = std::string_view;

// A template line longer than this is cut: its head is enough to match.
constexpr std::size_t kMaxTemplateSource = 400;

// mask_variables()'s markers and the placeholder names they become.
constexpr std::pair<sv, sv> kMarkers[] = {{"<num>", "num"},   {"<hex>", "hex"}, {"<shape>", "shape"},
                                          {"<path>", "path"}, {"<url>", "url"}, {"<ts>", "ts"},
                                          {"<uuid>", "uuid"}, {"<ip>", "ip"},   {"<id>", "id"}};

struct Template {
  std::string text;  // "shard {num1} lost its block at {hex1}"
  std::vector<std::string> words;  // the literal words, for the id
};

// The masked message as a template: each marker a numbered placeholder,
// literal braces and percent signs doubled.
Template template_of(sv line) {
  if (line.size() > kMaxTemplateSource) {
    std::size_t cut = kMaxTemplateSource;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    line = line.substr(0, cut);
  }
  const std::string masked = mask_variables(line);
  Template t;
  std::map<sv, int> seen;
  std::string word;
  const auto end_word = [&] {
    if (!word.empty()) t.words.push_back(std::move(word));
    word.clear();
  };
  for (std::size_t i = 0; i < masked.size();) {
    bool marker = false;
    for (const auto& [m, name] : kMarkers) {
      if (sv(masked).substr(i, m.size()) == m) {
        end_word();
        t.text += fmt::format("{{{}{}}}", name, ++seen[name]);
        i += m.size();
        marker = true;
        break;
      }
    }
    if (marker) continue;
    const char c = masked[i++];
    if (c == '{' || c == '}' || c == '%') t.text += c;
    t.text += c;
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum)
      word += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    else
      end_word();
  }
  end_word();
  return t;
}

// `line` as it is, braces and percent signs doubled.
Template literal_template(sv line) {
  Template t;
  for (const char c : line.substr(0, kMaxTemplateSource)) {
    if (c == '{' || c == '}' || c == '%') t.text += c;
    t.text += c;
  }
  return t;
}

std::string slug_of(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size() && i < 5; ++i) out += (out.empty() ? "" : "_") + words[i];
  return out.empty() ? "message" : out.substr(0, 48);
}

std::string library_slug(std::string s) {
  for (char& c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '_';
  return s.empty() ? "unknown" : s;
}

// The upstream repository of a library stated_sites() names.
std::string repo_of(sv library) {
  if (library == "candle") return "huggingface/candle";
  if (library == "transformers") return "huggingface/transformers";
  if (library == "torch" || library == "libtorch") return "pytorch/pytorch";
  return "TODO";
}

struct Draft {
  std::string id, library, template_text, error_class, message;
  StatedSite site;  // path "TODO" when the message states none
  std::vector<Capture> captures;  // what the template captures in `message`
};

Draft draft_of(sv message, const DraftOptions& options) {
  const Normalized n = normalize(message);
  Draft d;
  sv root = message;
  if (!n.segments.empty()) {
    root = n.segments.front().text;
    d.error_class = n.segments.front().exception_class;
  }
  sv first_line = root.substr(0, root.find('\n'));
  // A log prefix normalize() does not know ("cache - OSError: ...") stays
  // before the class; fingerprint() finds such a class, and the template
  // starts after it, as it does for a class the wrapper named.
  if (d.error_class.empty()) {
    const std::string fp = fingerprint(first_line).text;
    const std::size_t colon = fp.find(": ");
    const sv cls = sv(fp).substr(0, colon);
    const auto ends = [&](sv tail) { return cls.size() > tail.size() && cls.substr(cls.size() - tail.size()) == tail; };
    const std::size_t at = first_line.find(std::string(cls) + ": ");
    if (colon != std::string::npos && cls.find(' ') == sv::npos && (ends("Error") || ends("Exception")) &&
        at != sv::npos) {
      d.error_class = std::string(cls);
      first_line.remove_prefix(at + cls.size() + 2);
    }
  }
  Template t = template_of(first_line);
  if (t.words.empty())
    t = literal_template(first_line);  // all values ("42"): a template of placeholders alone matches anything
  d.template_text = t.text;
  const std::vector<StatedSite> sites = stated_sites(message);
  if (!sites.empty()) {
    d.site = sites.front();
  } else {
    d.site.path = "TODO";
  }
  d.library = !options.library.empty() ? options.library : !d.site.library.empty() ? d.site.library : "unknown";
  d.library = library_slug(d.library);
  d.id = fmt::format("draft.{}.{}", d.library, slug_of(t.words));
  if (d.error_class.empty()) d.error_class = "Exception";
  d.message = std::string(message);
  return d;
}

void emit(YAML::Emitter& out, const Draft& d) {
  out << YAML::BeginMap;
  out << YAML::Key << "id" << YAML::Value << d.id;
  out << YAML::Key << "library" << YAML::Value << d.library;
  out << YAML::Key << "template" << YAML::Value << YAML::DoubleQuoted << d.template_text;
  out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "repo" << YAML::Value << YAML::DoubleQuoted << repo_of(d.library);
  out << YAML::Key << "path" << YAML::Value << YAML::DoubleQuoted << d.site.path;
  if (d.site.line > 0) out << YAML::Key << "line" << YAML::Value << d.site.line;
  // The loader needs a line or a symbol; a message naming neither leaves it to the author.
  if (!d.site.function.empty() || d.site.line == 0)
    out << YAML::Key << "symbol" << YAML::Value << YAML::DoubleQuoted
        << (d.site.function.empty() ? std::string("TODO") : d.site.function);
  out << YAML::Key << "commit" << YAML::Value << "TODO"
      << YAML::Comment("the upstream commit the path and line are read at");
  out << YAML::EndMap;
  out << YAML::Key << "error_class" << YAML::Value << YAML::DoubleQuoted << d.error_class;
  out << YAML::Key << "kind" << YAML::Value << "internal"
      << YAML::Comment(
             "validation, unsupported-feature, shape-mismatch, dtype-mismatch, resource, "
             "missing-dependency, configuration or internal");
  out << YAML::Key << "cause" << YAML::Value << "TODO: what the error means, in our own words";
  out << YAML::Key << "trigger" << YAML::Value << "TODO: what makes it happen";
  out << YAML::Key << "remediation" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "text"
      << YAML::Value << "TODO: the step most likely to work" << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "examples" << YAML::Value << YAML::BeginMap << YAML::Key << "match" << YAML::Value
      << YAML::BeginSeq;
  if (d.captures.empty()) {
    out << YAML::DoubleQuoted << d.message;
  } else {
    out << YAML::BeginMap << YAML::Key << "text" << YAML::Value << YAML::DoubleQuoted << d.message;
    out << YAML::Key << "captures" << YAML::Value << YAML::BeginMap;
    for (const Capture& c : d.captures) out << YAML::Key << c.name << YAML::Value << YAML::DoubleQuoted << c.value;
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  out << YAML::EndMap;
}

// Each entry is emitted alone and indented under `entries:`, so its note
// is a comment line of its own above it (the emitter would put it at the
// end of the previous entry's last line).
std::string file_of(const std::vector<Draft>& drafts, const std::vector<std::string>& notes) {
  std::string file =
      "# Drafted by errshim draft: write cause, trigger and remediation, check kind, error_class and source,\n"
      "# then rename the id.\nschema: 1\nentries:\n";
  for (std::size_t i = 0; i < drafts.size(); ++i) {
    if (!notes[i].empty()) file += "  # " + notes[i] + "\n";
    YAML::Emitter out;
    out << YAML::BeginSeq;
    emit(out, drafts[i]);
    out << YAML::EndSeq;
    // Strings are double-quoted, line breaks in them escaped: every line
    // break here is the emitter's own.
    const sv text = out.c_str();
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t eol = std::min(text.find('\n', at), text.size());
      file += "  ";
      file += text.substr(at, eol - at);
      file += '\n';
      at = eol + 1;
    }
  }
  return file;
}

// The captures the draft's own template takes from its message, read by
// compiling the draft alone: lint wants one example to state them. A draft
// that does not load or match keeps none, and lint then says why.
void fill_captures(Draft& d) {
  try {
    const CatalogPtr alone = CatalogBuilder().add_yaml(file_of({d}, {""}), "draft").build();
    if (const auto hit = alone->diagnose(d.message)) d.captures = hit->captures;
  } catch (const catalog_error&) {}
}

}  // namespace

std::string draft_entry(std::string_view message, const DraftOptions& options) {
  if (message.find_first_not_of(" \t\r\n") == sv::npos)
    throw std::invalid_argument("draft_entry: the message is empty: give the error's text");
  Draft d = draft_of(message, options);
  fill_captures(d);
  return file_of({d}, {""});
}

std::vector<DraftGroup> unrecognised_groups(const std::string& path, const Catalog& catalog, std::size_t top) {
  std::vector<DraftGroup> groups;  // in order of first appearance
  std::map<std::string, std::size_t, std::less<>> index;
  scan_file(path, catalog, [&](const ScanBlock& block) {
    if (block.diagnosis) return;
    Fingerprint f = fingerprint(block.text);
    const auto [it, fresh] = index.emplace(f.id, groups.size());
    if (fresh) groups.push_back({std::move(f.id), 0, block.text, block.file, block.line});
    ++groups[it->second].count;
  });
  std::stable_sort(groups.begin(), groups.end(),
                   [](const DraftGroup& a, const DraftGroup& b) { return a.count > b.count; });
  if (groups.size() > top) groups.resize(top);
  return groups;
}

std::string draft_entries(const std::vector<DraftGroup>& groups, const DraftOptions& options) {
  std::vector<Draft> drafts;
  std::vector<std::string> notes;
  std::set<std::string> ids;
  for (const DraftGroup& g : groups) {
    Draft d = draft_of(g.message, options);
    fill_captures(d);
    const std::string base = d.id;
    for (int k = 2; !ids.insert(d.id).second; ++k) d.id = fmt::format("{}_{}", base, k);
    drafts.push_back(std::move(d));
    // The file name comes from the user, the rest are numbers: escaped, a
    // line break in it cannot end the comment.
    notes.push_back(fmt::format("seen {} time{}, fingerprint {}, first at {}:{}", g.count, g.count == 1 ? "" : "s",
                                g.fingerprint, detail::escape_controls(g.file), g.line));
  }
  return file_of(drafts, notes);
}

}  // namespace errshim
