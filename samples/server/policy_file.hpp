// The remediation policy of samples/server, read from a YAML file the
// operator owns:
//
//   mode: auto                       # off | explain | suggest | auto
//   allowed: [safe, slower]          # safety classes applied automatically
//   suggest: [changes-output]        # reported with their changes, not applied
//   pinned_keys: [dtype]             # never changed by a fix
//   max_retries: 3
//   entry_modes: {libtorch.narrow.out_of_range: explain}
//   allow_entries: [], deny_entries: [], allow_keys: [], deny_keys: []
//
// Every problem is reported with file:line:column; an unknown key is an
// error, so a typo never silently leaves the default in force.
#pragma once

#include <filesystem>

#include <errshim/remediation.hpp>

namespace sample_server {

// Throws std::runtime_error naming the file, line and column.
errshim::Policy load_policy(const std::filesystem::path& path);

}  // namespace sample_server
