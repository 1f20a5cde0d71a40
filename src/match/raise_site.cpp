// Reading where a message says it was raised. Plain string work on the
// message's lines: the forms are fixed texts that torch, caffe2, Rust's
// backtrace printer and Python's traceback printer write.
#include "errshim/raise_site.hpp"

#include <algorithm>

#include "errshim/catalog.hpp"
#include "errshim/normalize.hpp"
#include "text.hpp"

namespace errshim {
namespace {

using sv = std::string_view;
constexpr std::size_t kMaxSites = 8;
constexpr std::size_t kMaxRustFrames = 3;  // the first candle frames below the error's own machinery

using detail::ends_with;
using detail::is_digit;
using detail::ltrim;
using detail::rtrim;
using detail::starts_with;

int parse_line_number(sv digits) {
  if (digits.empty() || digits.size() > 9) return 0;
  int n = 0;
  for (char c : digits) {
    if (!is_digit(c)) return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

// "PATH:LINE" (a trailing ":COL" allowed, as Rust prints): false when it has no line.
bool split_location(sv loc, std::string& path, int& line) {
  loc = rtrim(loc);
  std::size_t colon = loc.rfind(':');
  if (colon == sv::npos) return false;
  int n = parse_line_number(loc.substr(colon + 1));
  if (n > 0 && colon > 0) {
    // PATH:LINE:COL: the line is the field before.
    const std::size_t before = loc.rfind(':', colon - 1);
    if (before != sv::npos) {
      const int l = parse_line_number(loc.substr(before + 1, colon - before - 1));
      if (l > 0) {
        n = l;
        colon = before;
      }
    }
  }
  if (n <= 0 || colon == 0) return false;
  path.assign(loc.substr(0, colon));
  line = n;
  return true;
}

// "Exception raised from F at PATH:LINE (most recent call first):"
bool read_c10(sv t, StatedSite& out) {
  constexpr sv kMarker = "Exception raised from ";
  const std::size_t at = t.find(kMarker);
  if (at == sv::npos) return false;
  sv rest = t.substr(at + kMarker.size());
  const std::size_t sep = rest.find(" at ");
  if (sep == sv::npos) return false;
  sv loc = rest.substr(sep + 4);
  loc = loc.substr(0, loc.find(" ("));
  out = {"libtorch", {}, 0, std::string(rest.substr(0, sep)), "c10"};
  return split_location(loc, out.path, out.line);
}

// "(Triggered internally at  ../aten/src/ATen/native/x.cpp:150.)" and
// "[enforce fail at inline_container.cc:145]".
bool read_located(sv t, sv marker, char end, sv library, sv form, StatedSite& out) {
  const std::size_t at = t.find(marker);
  if (at == sv::npos) return false;
  sv loc = ltrim(t.substr(at + marker.size()));
  loc = loc.substr(0, loc.find(end));
  while (!loc.empty() && (loc.back() == '.' || loc.back() == ')')) loc.remove_suffix(1);
  out = {std::string(library), {}, 0, {}, std::string(form)};
  return split_location(loc, out.path, out.line);
}

// '  File "/x/site-packages/transformers/generation/utils.py", line 1234, in generate'
bool read_python_frame(sv t, StatedSite& out) {
  t = ltrim(t);
  if (!starts_with(t, "File \"")) return false;
  t.remove_prefix(6);
  const std::size_t q = t.find('"');
  if (q == sv::npos) return false;
  std::string path(t.substr(0, q));
  std::replace(path.begin(), path.end(), '\\', '/');
  sv rest = t.substr(q + 1);
  if (!starts_with(rest, ", line ")) return false;
  rest.remove_prefix(7);
  const std::size_t comma = rest.find(',');
  const int line = parse_line_number(rtrim(rest.substr(0, comma)));
  std::string function;
  if (comma != sv::npos && starts_with(rest.substr(comma), ", in "))
    function = std::string(rtrim(rest.substr(comma + 5)));
  // Only library code says where a library raised.
  std::string library;
  for (sv root : {sv("/site-packages/"), sv("/dist-packages/")}) {
    const std::size_t r = path.rfind(root);
    if (r == std::string::npos) continue;
    const sv inside = sv(path).substr(r + root.size());
    if (starts_with(inside, "transformers/"))
      library = "transformers";
    else if (starts_with(inside, "torch/"))
      library = "torch";
    if (!library.empty()) path.erase(0, r + root.size());
    break;
  }
  if (library.empty()) return false;
  out = {library, std::move(path), line, std::move(function), "python-frame"};
  return true;
}

bool is_candle_symbol(sv s) {
  if (starts_with(s, "<")) s.remove_prefix(1);
  if (!starts_with(s, "candle_")) return false;
  // The error's own construction is never where it was raised.
  return s.find("::error::") == sv::npos && !ends_with(s, "::bt") && s.find("anyhow") == sv::npos;
}

// "candle_transformers::models::glm4::SelfAttention::forward" ->
// "candle-transformers/src/models/glm4/SelfAttention/forward" (read as a
// module path; site_fit takes a prefix of it).
std::string module_path(sv symbol) {
  if (starts_with(symbol, "<")) symbol.remove_prefix(1);
  symbol = symbol.substr(0, symbol.find_first_of("< >"));
  std::string out;
  bool first = true;
  while (!symbol.empty()) {
    const std::size_t sep = symbol.find("::");
    const sv part = symbol.substr(0, sep);
    if (first) {
      out.assign(part);
      std::replace(out.begin(), out.end(), '_', '-');
      out += "/src";
      first = false;
    } else {
      out += '/';
      out += part;
    }
    if (sep == sv::npos) break;
    symbol.remove_prefix(sep + 2);
  }
  return out;
}

// ".../registry/src/index.crates.io-6f17d22bba15001f/candle-core-0.8.0/src/x.rs" ->
// "candle-core/src/x.rs": a crate's versioned directory read as its folder in the repository.
std::string repository_path(sv path) {
  std::string p(path);
  std::replace(p.begin(), p.end(), '\\', '/');
  for (std::size_t at = p.find("/candle-"); at != std::string::npos; at = p.find("/candle-", at + 1)) {
    const std::size_t end = p.find('/', at + 1);
    if (end == std::string::npos) break;
    sv dir = sv(p).substr(at + 1, end - at - 1);
    // "candle-core-0.8.0": drop "-<digit>..." at the end.
    std::size_t cut = dir.size();
    for (std::size_t k = 0; k + 1 < dir.size(); ++k)
      if (dir[k] == '-' && is_digit(dir[k + 1])) {
        cut = k;
        break;
      }
    if (cut < dir.size() && sv(p).substr(end, 5) == "/src/") return std::string(dir.substr(0, cut)) + p.substr(end);
  }
  return p;
}

// "   3: candle_core::tensor::Tensor::matmul" / "             at src/x.rs:1:2"
bool rust_frame_symbol(sv t, sv& symbol) {
  t = ltrim(t);
  std::size_t d = 0;
  while (d < t.size() && d < 6 && is_digit(t[d])) ++d;
  if (d == 0 || d + 1 >= t.size() || t[d] != ':' || t[d + 1] != ' ') return false;
  symbol = rtrim(ltrim(t.substr(d + 2)));
  // "0x5581...  - candle_core::..." (older printers put the address first)
  const std::size_t dash = symbol.find(" - ");
  if (starts_with(symbol, "0x") && dash != sv::npos) symbol = ltrim(symbol.substr(dash + 3));
  return true;
}

sv normalised_path(sv p) {
  for (;;) {
    if (starts_with(p, "./"))
      p.remove_prefix(2);
    else if (starts_with(p, "../"))
      p.remove_prefix(3);
    else
      return p;
  }
}

bool path_suffix(sv stated, sv pin) {
  return !pin.empty() && (stated == pin || (ends_with(stated, pin) && stated[stated.size() - pin.size() - 1] == '/'));
}

}  // namespace

std::vector<StatedSite> stated_sites(std::string_view message) {
  message = message.substr(0, kMaxInputBytes);
  std::vector<StatedSite> out;
  // The current Python traceback's innermost frame per library: a chained
  // exception or a new traceback starts the next group.
  std::vector<StatedSite> frames;
  std::size_t rust_frames = 0;
  auto close_traceback = [&] {
    for (StatedSite& f : frames)
      if (out.size() < kMaxSites) out.push_back(std::move(f));
    frames.clear();
  };
  std::size_t pos = 0;
  while (pos <= message.size() && out.size() < kMaxSites) {
    const std::size_t nl = message.find('\n', pos);
    const sv t = message.substr(pos, nl == sv::npos ? sv::npos : nl - pos);
    const std::size_t next = nl == sv::npos ? message.size() + 1 : nl + 1;
    StatedSite s;
    sv symbol;
    if (t.find("Traceback (most recent call last)") != sv::npos ||
        t.find("The above exception was the direct cause") != sv::npos ||
        t.find("During handling of the above exception") != sv::npos) {
      close_traceback();
    } else if (read_python_frame(t, s)) {
      auto same =
          std::find_if(frames.begin(), frames.end(), [&](const StatedSite& f) { return f.library == s.library; });
      if (same != frames.end())
        *same = std::move(s);
      else
        frames.push_back(std::move(s));
      pos = next;
      continue;
    }
    if (read_c10(t, s) || read_located(t, "Triggered internally at ", ')', "libtorch", "warning", s) ||
        read_located(t, "[enforce fail at ", ']', "libtorch", "enforce", s)) {
      out.push_back(std::move(s));
    } else if (rust_frames < kMaxRustFrames && rust_frame_symbol(t, symbol) && is_candle_symbol(symbol)) {
      StatedSite f{"candle", module_path(symbol), 0, std::string(symbol), "rust-frame"};
      if (next < message.size()) {
        const std::size_t nl2 = message.find('\n', next);
        const sv at = ltrim(message.substr(next, nl2 == sv::npos ? sv::npos : nl2 - next));
        std::string path;
        int line = 0;
        if (starts_with(at, "at ") && split_location(at.substr(3), path, line)) {
          f.path = repository_path(path);
          f.line = line;
        }
      }
      out.push_back(std::move(f));
      ++rust_frames;
    }
    pos = next;
  }
  close_traceback();
  if (out.size() > kMaxSites) out.resize(kMaxSites);
  return out;
}

SiteFit site_fit(const SourcePin& pin, const StatedSite& site) {
  if (pin.path.empty() || site.path.empty()) return SiteFit::none;
  const sv p = pin.path;
  std::string slashed;  // Windows paths
  sv s = site.path;
  if (s.find('\\') != sv::npos) {
    slashed.assign(s);
    std::replace(slashed.begin(), slashed.end(), '\\', '/');
    s = slashed;
  }
  s = normalised_path(s);
  bool file = false;
  if (site.form == "rust-frame" && site.line == 0) {
    // A module path: the pin's file, without ".rs" or "/mod.rs", is a
    // prefix of it below the crate's src/.
    sv stem = p;
    if (ends_with(stem, "/mod.rs"))
      stem.remove_suffix(7);
    else if (ends_with(stem, ".rs"))
      stem.remove_suffix(3);
    const std::size_t src = stem.find("/src/");
    file = src != sv::npos && starts_with(s, stem) && (s.size() == stem.size() || s[stem.size()] == '/');
  } else {
    file = path_suffix(s, p) || (starts_with(p, "src/") && path_suffix(s, p.substr(4)));
    // caffe2 names the file alone.
    if (!file && s.find('/') == sv::npos) {
      const std::size_t slash = p.rfind('/');
      file = (slash == sv::npos ? p : p.substr(slash + 1)) == s;
    }
  }
  if (!file) return SiteFit::none;
  return site.line > 0 && site.line == pin.line ? SiteFit::line : SiteFit::file;
}

SiteResolution resolve_site(const Diagnosis& d) {
  SiteResolution r;
  r.stated = stated_sites(d.raw);
  if (!d.entry || r.stated.empty()) return r;
  auto consider = [&](const SourcePin& pin) {
    for (const StatedSite& s : r.stated) {
      const SiteFit fit = site_fit(pin, s);
      if (fit > r.fit) {
        r.fit = fit;
        r.pin = &pin;
      }
    }
  };
  consider(d.entry->source);
  for (const SourcePin& pin : d.entry->also_at) consider(pin);
  return r;
}

}  // namespace errshim
