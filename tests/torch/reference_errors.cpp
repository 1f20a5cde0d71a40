#include "reference_errors.hpp"

#include <torch/torch.h>

namespace torch_reference {

namespace {
using torch::indexing::Slice;

// A static cache (batch 1, 8 KV heads, 32 positions, head size 16) and keys
// for two new positions.
torch::Tensor cache() { return torch::zeros({1, 8, 32, 16}); }
torch::Tensor keys(std::int64_t heads = 8) { return torch::randn({1, heads, 2, 16}); }
}  // namespace

std::vector<ReferenceCall> reference_calls() {
  return {
      {"merge_heads_with_view", "libtorch.shape.view_stride_incompatible", "aten/src/ATen/native/TensorShape.cpp:2964",
       "",
       [] {
         torch::randn({1, 8, 5, 8}).transpose(1, 2).view({1, 5, 64});
       }},
      {"slice_assign_wrong_heads", "libtorch.shape.expand_mismatch", "aten/src/ATen/ExpandUtils.cpp:87", "",
       [] {
         cache().index_put_({Slice(), Slice(), Slice(0, 2)}, keys(4));
       }},
      {"index_put_wrong_heads", "libtorch.index_put.shape_mismatch",
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:537", "",
       [] {
         cache().index_put_({Slice(), Slice(), torch::arange(0, 2)}, keys(4));
       }},
      {"index_put_wrong_dtype", "libtorch.index_put.dtype_mismatch",
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:539", "",
       [] {
         cache().index_put_({Slice(), Slice(), torch::arange(0, 2)}, keys().to(torch::kBFloat16));
       }},
      {"positions_for_three_tokens_two_written", "libtorch.index_copy.index_count_mismatch",
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:268", "",
       [] { cache().index_copy_(2, torch::arange(0, 3), keys()); }},
      {"rope_table_read_past_its_end", "libtorch.dim.out_of_range", "c10/core/WrapDimMinimal.cpp:24", "",
       [] {
         torch::randn({32, 4}).narrow(0, 40, 1);
       }},
      {"linear_dtype_2d", "libtorch.matmul.mat1_mat2_dtype", "aten/src/ATen/native/LinearAlgebra.cpp:63",
       "aten/src/ATen/native/LinearAlgebra.cpp:52",  // ADDMM_META, expanded in the addmm meta function
       [] {
         torch::nn::Linear l(8, 8);
         l->to(torch::kBFloat16);
         l(torch::randn({2, 8}));
       }},
      {"linear_width", "libtorch.matmul.shapes_cannot_be_multiplied", "aten/src/ATen/native/LinearAlgebra.cpp:73", "",
       [] {
         torch::nn::Linear(64, 64)(torch::randn({1, 5, 60}));
       }},
      {"scores_with_other_key_head_size", "libtorch.bmm.batch2_shape", "aten/src/ATen/native/LinearAlgebra.cpp:170", "",
       [] {
         torch::matmul(torch::randn({1, 8, 5, 8}), torch::randn({1, 8, 7, 16}).transpose(-2, -1));
       }},
      {"mask_on_meta_device", "libtorch.device.tensors_on_different_devices", "aten/src/ATen/TensorIterator.cpp:482",
       "", [] { (void)(torch::randn({2}) + torch::empty({2}, torch::Device(torch::kMeta))); }},
      {"torch_mha_60_over_8", "libtorch.nn.mha_embed_dim_not_divisible",
       "torch/csrc/api/src/nn/modules/activation.cpp:502", "",
       [] { torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(60, 8)); }},
      {"softmax_of_a_bool_mask", "libtorch.dtype.not_implemented_for",
       "aten/src/ATen/native/cpu/SoftMaxKernel.cpp:1193", "",
       [] {
         torch::softmax(torch::ones({2, 3}, torch::kBool), -1);
       }},
      {"softmax_in_half", "libtorch.dtype.half_not_implemented", "aten/src/ATen/native/cpu/SoftMaxKernel.cpp:1193", "",
       [] {
         torch::softmax(torch::randn({2, 8}).to(torch::kHalf), -1);
       }},
  };
}

}  // namespace torch_reference
