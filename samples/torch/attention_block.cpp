#include "attention_block.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <torch/version.h>

namespace torch_attention {

namespace {

torch::ScalarType parse_dtype(const std::string& name) {
  // Both the spelling configs use and the one torch prints in its messages
  // ("BFloat16"), so a value read out of an error can be written back.
  if (name == "float32" || name == "float" || name == "Float") return torch::kFloat32;
  if (name == "bfloat16" || name == "BFloat16") return torch::kBFloat16;
  if (name == "float16" || name == "half" || name == "Half") return torch::kFloat16;
  throw std::invalid_argument("unknown dtype '" + name + "' (float32, bfloat16, float16)");
}

torch::Device parse_device(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "meta") return torch::Device(torch::kMeta);
  throw std::invalid_argument("unknown cache_device '" + name + "' (cpu, meta)");
}

// Rotary embedding: each pair (x1, x2) of halves is rotated by the position's
// angle. cos/sin are (tokens, head_dim / 2) and broadcast over batch and heads.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const std::int64_t half = x.size(-1) / 2;
  const torch::Tensor x1 = x.narrow(-1, 0, half);
  const torch::Tensor x2 = x.narrow(-1, half, half);
  return torch::cat({x1 * cos - x2 * sin, x1 * sin + x2 * cos}, -1);
}

}  // namespace

struct AttentionBlock::Impl {
  AttentionConfig config;
  std::int64_t head_dim = 0;
  torch::ScalarType dtype = torch::kFloat32;
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  torch::nn::Embedding positions{nullptr};  // "learned"
  torch::Tensor rope_cos, rope_sin;  // "rope": (max_position_embeddings, head_dim / 2)
  torch::Tensor k_cache, v_cache;  // (batch, kv heads, positions, head_dim)
  std::int64_t length = 0;
  torch::Generator inputs = at::make_generator<at::CPUGeneratorImpl>(1234);

  explicit Impl(const AttentionConfig& c) : config(c) {
    if (c.num_heads <= 0 || c.num_kv_heads <= 0)
      throw std::invalid_argument("num_heads and num_kv_heads must be positive");
    if (c.position_embedding != "rope" && c.position_embedding != "learned")
      throw std::invalid_argument("position_embedding must be 'rope' or 'learned'");
    if (c.cache_implementation != "static" && c.cache_implementation != "dynamic")
      throw std::invalid_argument("cache_implementation must be 'static' or 'dynamic'");
    dtype = parse_dtype(c.dtype);
    const torch::ScalarType cache_dtype = c.cache_dtype.empty() ? dtype : parse_dtype(c.cache_dtype);
    const torch::Device cache_device = parse_device(c.cache_device);
    head_dim = c.embed_dim / c.num_heads;

    torch::manual_seed(0);  // the same weights on every run
    // GPT-style projections: q and the output keep the full embed_dim, k and v
    // are sized for the KV heads.
    q_proj = torch::nn::Linear(c.embed_dim, c.embed_dim);
    k_proj = torch::nn::Linear(c.embed_dim, c.num_kv_heads * head_dim);
    v_proj = torch::nn::Linear(c.embed_dim, c.num_kv_heads * head_dim);
    o_proj = torch::nn::Linear(c.embed_dim, c.embed_dim);
    for (auto* m : {&q_proj, &k_proj, &v_proj, &o_proj}) (*m)->to(dtype);

    if (c.position_embedding == "learned") {
      positions = torch::nn::Embedding(c.max_position_embeddings, c.embed_dim);
      positions->to(dtype);
    } else {
      const std::int64_t half = head_dim / 2;
      const torch::Tensor inv_freq = torch::pow(
          10000.0, -torch::arange(half, torch::kFloat32) / static_cast<double>(std::max<std::int64_t>(half, 1)));
      const torch::Tensor angles = torch::outer(torch::arange(c.max_position_embeddings, torch::kFloat32), inv_freq);
      // Stored in the model's dtype so q and k keep theirs after rotation.
      rope_cos = angles.cos().to(dtype);
      rope_sin = angles.sin().to(dtype);
    }

    const std::int64_t cache_hd = c.cache_head_dim > 0 ? c.cache_head_dim : head_dim;
    const std::int64_t capacity = c.cache_implementation == "static" ? c.max_cache_len : 0;
    const auto options = torch::TensorOptions().dtype(cache_dtype).device(cache_device);
    // A dynamic cache starts with zero positions and the shape the serving
    // layer expects, like a restored prompt cache would.
    k_cache = torch::zeros({c.max_batch_size, c.num_kv_heads, capacity, cache_hd}, options);
    v_cache = torch::zeros({c.max_batch_size, c.num_kv_heads, capacity, cache_hd}, options);
  }

  StepResult step(std::int64_t batch, std::int64_t tokens) {
    torch::NoGradGuard no_grad;
    const AttentionConfig& c = config;
    // Drawn in float32 and converted: CPU random kernels do not cover every
    // dtype, and the point is to fail in the attention code, not here.
    torch::Tensor x = torch::randn({batch, tokens, c.embed_dim}, inputs, torch::kFloat32).to(dtype);
    const torch::Tensor pos = torch::arange(length, length + tokens, torch::kLong);
    if (positions) x = x + positions(pos);

    // (batch, tokens, heads * head_dim) -> (batch, heads, tokens, head_dim)
    torch::Tensor q = q_proj(x).view({batch, tokens, c.num_heads, head_dim}).transpose(1, 2);
    torch::Tensor k = k_proj(x).view({batch, tokens, c.num_kv_heads, head_dim}).transpose(1, 2);
    torch::Tensor v = v_proj(x).view({batch, tokens, c.num_kv_heads, head_dim}).transpose(1, 2);

    if (!positions) {
      const torch::Tensor cos = rope_cos.narrow(0, length, tokens);
      const torch::Tensor sin = rope_sin.narrow(0, length, tokens);
      q = rotate(q, cos, sin);
      k = rotate(k, cos, sin);
    }

    torch::Tensor keys, values;
    if (c.cache_implementation == "static") {
      // Writes the new positions in place, as transformers' StaticCache does.
      k_cache.index_copy_(2, pos, k);
      v_cache.index_copy_(2, pos, v);
      keys = k_cache.narrow(2, 0, length + tokens);
      values = v_cache.narrow(2, 0, length + tokens);
    } else {
      k_cache = torch::cat({k_cache, k}, 2);
      v_cache = torch::cat({v_cache, v}, 2);
      keys = k_cache;
      values = v_cache;
    }

    // Grouped-query attention: each KV head serves num_heads / num_kv_heads
    // query heads.
    const std::int64_t group = c.num_heads / c.num_kv_heads;
    if (group != 1) {
      keys = keys.repeat_interleave(group, 1);
      values = values.repeat_interleave(group, 1);
    }

    torch::Tensor scores = torch::matmul(q, keys.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    if (tokens > 1) {
      // Query i (at position length + i) sees keys up to that position.
      const torch::Tensor future = torch::ones({tokens, length + tokens}, torch::kBool).triu(length + 1);
      scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
    }
    const torch::Tensor attended = torch::matmul(torch::softmax(scores, -1), values);
    const torch::Tensor out = o_proj(attended.transpose(1, 2).reshape({batch, tokens, c.embed_dim}));

    length += tokens;  // only once the step has gone through
    StepResult r;
    r.output_shape = out.sizes().vec();
    r.dtype = c10::toString(out.scalar_type());
    r.cache_length = length;
    return r;
  }
};

AttentionBlock::AttentionBlock(const AttentionConfig& config) : impl_(std::make_unique<Impl>(config)) {}
AttentionBlock::~AttentionBlock() = default;
AttentionBlock::AttentionBlock(AttentionBlock&&) noexcept = default;
AttentionBlock& AttentionBlock::operator=(AttentionBlock&&) noexcept = default;

StepResult AttentionBlock::step(std::int64_t batch, std::int64_t tokens) { return impl_->step(batch, tokens); }
std::int64_t AttentionBlock::cache_length() const noexcept { return impl_->length; }
const AttentionConfig& AttentionBlock::config() const noexcept { return impl_->config; }

std::string libtorch_version() { return TORCH_VERSION; }

}  // namespace torch_attention
