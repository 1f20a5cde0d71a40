// libtorch calls, outside the attention block, that raise the other messages
// the catalog pins to libtorch 1.13: each is the smallest realistic KV-cache or
// attention mistake that produces it. Kept in their own translation unit (the
// only other one that includes <torch/torch.h>), so the test stays torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace torch_reference {

struct ReferenceCall {
  std::string name;
  std::string id;  // the catalog entry that must explain it (no context)
  std::string raised_at;  // "path:line" libtorch prints in "Exception raised from"
  std::string pinned;  // the entry's pin when it differs (checks written in macros)
  std::function<void()> call;
};

std::vector<ReferenceCall> reference_calls();

}  // namespace torch_reference
