// A small causal self-attention block with a KV cache, on libtorch, with random
// weights. Its config can be wrong in the ways real model and cache configs
// are (head counts, cache shapes and dtypes, capacities), and each mistake
// surfaces as the error libtorch itself raises: there is deliberately no
// validation here beyond what avoids undefined behaviour.
//
// The header is torch-free (the implementation sits behind a pointer), so
// programs that only configure and run the block compile quickly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torch_attention {

struct AttentionConfig {
  // The model. head_dim is embed_dim / num_heads (integer division, as
  // GPT-style code computes it; a remainder is the caller's mistake).
  std::int64_t embed_dim = 64;
  std::int64_t num_heads = 8;
  std::int64_t num_kv_heads = 8;  // fewer than num_heads: grouped-query attention
  std::int64_t max_position_embeddings = 64;
  std::string position_embedding = "rope";  // "rope" (rotary table) or "learned" (embedding table)
  std::string dtype = "float32";  // weights and activations: float32, bfloat16, float16

  // The KV cache, sized by whoever serves the model (vocabulary of
  // transformers' StaticCache / DynamicCache).
  std::string cache_implementation = "static";  // "static": preallocated, written with index_copy_;
                                                // "dynamic": grows with torch::cat
  std::int64_t max_cache_len = 32;  // static capacity, in positions
  std::int64_t max_batch_size = 1;  // the batch the cache is allocated for
  std::int64_t cache_head_dim = 0;  // 0: the model's head_dim
  std::string cache_dtype;  // empty: the model's dtype
  std::string cache_device = "cpu";  // "cpu", or "meta" (allocated without storage)
};

// What one step produced, in plain types so callers need no torch headers.
struct StepResult {
  std::vector<std::int64_t> output_shape;  // (batch, tokens, embed_dim)
  std::string dtype;  // of the output, as torch names it ("Float", "BFloat16")
  std::int64_t cache_length = 0;  // positions in the cache after the step
};

class AttentionBlock {
 public:
  // Builds weights (seeded, so runs are repeatable) and allocates the cache.
  // Throws what libtorch throws (c10::Error for an allocation that fails);
  // std::invalid_argument only for values that would divide by zero or name
  // an unknown dtype, device or mode.
  explicit AttentionBlock(const AttentionConfig& config);
  ~AttentionBlock();
  AttentionBlock(AttentionBlock&&) noexcept;
  AttentionBlock& operator=(AttentionBlock&&) noexcept;

  // Feeds `tokens` new positions for `batch` sequences (random hidden states)
  // through the block: project, add positions, append to the cache, attend
  // causally over everything cached. The first call is the prompt, later
  // calls decode. Throws what libtorch throws.
  StepResult step(std::int64_t batch, std::int64_t tokens);

  std::int64_t cache_length() const noexcept;
  const AttentionConfig& config() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// TORCH_VERSION of the headers the block was built with. Debian's 1.13.1
// package reports "1.13.0": upstream's 1.13.1 tag did not bump the number.
std::string libtorch_version();

}  // namespace torch_attention
