#include "policy_file.hpp"

#include <set>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace sample_server {

namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const YAML::Node& at, const std::string& what) {
  const YAML::Mark m = at.Mark();
  throw std::runtime_error(fmt::format("{}:{}:{}: {}", file.string(), m.line + 1, m.column + 1, what));
}

std::string scalar(const std::filesystem::path& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(file, n, fmt::format("'{}' takes a single value", key));
  return n.Scalar();
}

std::set<std::string> strings(const std::filesystem::path& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence()) fail(file, n, fmt::format("'{}' takes a list, e.g. [a, b]", key));
  std::set<std::string> out;
  for (const YAML::Node& item : n) out.insert(scalar(file, item, key));
  return out;
}

errshim::Mode mode(const std::filesystem::path& file, const YAML::Node& n, const std::string& key) {
  const std::string s = scalar(file, n, key);
  if (auto m = errshim::parse_mode(s)) return *m;
  fail(file, n, fmt::format("unknown mode '{}' (off, explain, suggest, auto)", s));
}

std::set<errshim::Safety> classes(const std::filesystem::path& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence()) fail(file, n, fmt::format("'{}' takes a list of safety classes, e.g. [safe, slower]", key));
  std::set<errshim::Safety> out;
  for (const YAML::Node& item : n) {
    const std::string s = scalar(file, item, key);
    const auto c = errshim::parse_safety(s);
    if (!c) fail(file, item, fmt::format("unknown safety class '{}' (safe, slower, changes-output, manual)", s));
    if (*c == errshim::Safety::manual && key == "allowed")
      fail(file, item, "'manual' fixes need a person and are never applied: list it under 'suggest' at most");
    out.insert(*c);
  }
  return out;
}

}  // namespace

errshim::Policy load_policy(const std::filesystem::path& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::BadFile&) {
    throw std::runtime_error(fmt::format("{}: cannot read the policy file", path.string()));
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(
        fmt::format("{}:{}:{}: not YAML: {}", path.string(), e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) fail(path, root, "a policy file is a mapping of keys (mode, allowed, suggest, pinned_keys, ...)");

  errshim::Policy p;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "mode") {
      p.mode = mode(path, v, key);
    } else if (key == "allowed") {
      p.allowed = classes(path, v, key);
    } else if (key == "suggest") {
      p.suggest_classes = classes(path, v, key);
    } else if (key == "pinned_keys") {
      p.pinned_keys = strings(path, v, key);
    } else if (key == "allow_entries") {
      p.allow_entries = strings(path, v, key);
    } else if (key == "deny_entries") {
      p.deny_entries = strings(path, v, key);
    } else if (key == "allow_keys") {
      p.allow_keys = strings(path, v, key);
    } else if (key == "deny_keys") {
      p.deny_keys = strings(path, v, key);
    } else if (key == "max_retries") {
      const std::string s = scalar(path, v, key);
      try {
        std::size_t used = 0;
        const int n = std::stoi(s, &used);
        if (used != s.size() || n < 0 || n > 16) throw std::out_of_range(s);
        p.max_retries = n;
      } catch (const std::exception&) {
        fail(path, v, fmt::format("'max_retries' takes a number from 0 to 16, not '{}'", s));
      }
    } else if (key == "entry_modes") {
      if (!v.IsMap())
        fail(path, v, "'entry_modes' maps entry ids to modes, e.g. {libtorch.narrow.out_of_range: explain}");
      for (const auto& e : v) p.entry_modes[e.first.Scalar()] = mode(path, e.second, e.first.Scalar());
    } else {
      fail(path, kv.first,
           fmt::format("unknown key '{}' (mode, allowed, suggest, pinned_keys, max_retries, entry_modes, "
                       "allow_entries, deny_entries, allow_keys, deny_keys)",
                       key));
    }
  }
  return p;
}

}  // namespace sample_server
