"""Provokes real errors (and a few warnings) through the installed torch on
ordinary misuse: attention, KV caches, generation, loading. Prints one JSON
list: for each case its name, the group, what Python shows (the whole
traceback, or the warning line) and where torch says it was raised.

    /usr/bin/python3 tests/torch_python/provoke.py [--only NAME,...] > cases.json

Run it with TORCH_SHOW_CPP_STACKTRACES=1 for the form with C++ frames. The
raise site comes from torch's own output: "Exception raised from F at
PATH:LINE", "Triggered internally at PATH:LINE", or the last traceback frame
inside torch's Python package; a case where neither says states its file
(`raise_path`). Nothing here writes outside a temporary directory.
"""

import io
import json
import os
import re
import sys
import tempfile
import traceback
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
PKG_ROOT = os.path.dirname(TORCH_DIR)
CASES = []


def case(group, raise_path=None, warning=False):
    def deco(fn):
        CASES.append((fn.__name__, group, fn, raise_path, warning))
        return fn
    return deco


# --- attention -------------------------------------------------------------------------------
@case("attention")
def sdpa_key_head_dim():
    F._scaled_dot_product_attention(torch.zeros(2, 4, 8), torch.zeros(2, 5, 6), torch.zeros(2, 5, 6))


@case("attention")
def sdpa_mask_broadcast():
    q = torch.zeros(2, 3, 4, 8)
    F._scaled_dot_product_attention(q, torch.zeros(2, 3, 5, 8), torch.zeros(2, 3, 5, 8), attn_mask=torch.zeros(3, 3))


@case("attention")
def mha_heads_not_dividing():
    nn.MultiheadAttention(10, 3)


@case("attention")
def mha_query_embed_dim():
    m = nn.MultiheadAttention(8, 2)
    m(torch.zeros(4, 1, 6), torch.zeros(4, 1, 6), torch.zeros(4, 1, 6))


@case("attention")
def mha_key_value_shape():
    m = nn.MultiheadAttention(8, 2)
    m(torch.zeros(4, 1, 8), torch.zeros(5, 1, 8), torch.zeros(6, 1, 8))


@case("attention")
def mha_2d_mask_shape():
    m = nn.MultiheadAttention(8, 2)
    x = torch.zeros(4, 1, 8)
    m(x, x, x, attn_mask=torch.zeros(3, 3, dtype=torch.bool))


@case("attention")
def mha_3d_mask_shape():
    m = nn.MultiheadAttention(8, 2)
    x = torch.zeros(4, 1, 8)
    m(x, x, x, attn_mask=torch.zeros(5, 4, 4, dtype=torch.bool))


@case("attention")
def mha_4d_mask():
    m = nn.MultiheadAttention(8, 2)
    x = torch.zeros(4, 1, 8)
    m(x, x, x, attn_mask=torch.zeros(1, 2, 4, 4, dtype=torch.bool))


@case("attention")
def mha_int_mask():
    m = nn.MultiheadAttention(8, 2)
    x = torch.zeros(4, 1, 8)
    m(x, x, x, attn_mask=torch.zeros(4, 4, dtype=torch.int32))


@case("attention")
def mha_4d_query():
    m = nn.MultiheadAttention(8, 2)
    x = torch.zeros(2, 4, 1, 8)
    m(x, x, x)


@case("attention")
def mha_padding_mask_shape():
    m = nn.MultiheadAttention(8, 2)
    x = torch.zeros(4, 1, 8)
    m(x, x, x, key_padding_mask=torch.zeros(1, 3, dtype=torch.bool))


@case("attention", warning=True)
def mha_byte_mask_warning():
    m = nn.MultiheadAttention(8, 2)
    x = torch.zeros(4, 1, 8)
    m(x, x, x, attn_mask=torch.zeros(4, 4, dtype=torch.uint8))


@case("attention")
def bmm_batch2_shape():
    torch.bmm(torch.zeros(2, 3, 4), torch.zeros(2, 5, 6))


@case("attention")
def bmm_not_3d():
    torch.bmm(torch.zeros(3, 4), torch.zeros(4, 5))


@case("attention")
def mm_shapes():
    torch.mm(torch.zeros(2, 3), torch.zeros(4, 5))


@case("attention")
def mm_not_matrix():
    torch.mm(torch.zeros(2, 3, 4), torch.zeros(4, 5))


@case("attention")
def matmul_0d():
    torch.matmul(torch.tensor(1.0), torch.zeros(3))


@case("attention")
def matmul_half_cpu():
    torch.zeros(2, 3, dtype=torch.half) @ torch.zeros(3, 2, dtype=torch.half)


@case("attention")
def bmm_half_cpu():
    torch.bmm(torch.zeros(1, 2, 3, dtype=torch.half), torch.zeros(1, 3, 2, dtype=torch.half))


@case("attention")
def softmax_half_cpu():
    torch.zeros(2, 3, dtype=torch.half).softmax(-1)


@case("attention")
def linear_shapes():
    F.linear(torch.zeros(2, 6), torch.zeros(4, 8))


@case("attention")
def broadcast_scores_mask():
    torch.zeros(2, 4, 4) + torch.zeros(2, 4, 5)


@case("attention")
def softmax_dim_range():
    torch.zeros(2, 3).softmax(3)


@case("attention")
def baddbmm_input_shape():
    torch.baddbmm(torch.zeros(3, 3, 3), torch.zeros(2, 3, 4), torch.zeros(2, 4, 5))


@case("attention")
def einsum_operands():
    torch.einsum("bhqd,bhkd->bhqk", torch.zeros(2, 3, 4, 8))


@case("attention")
def view_heads_stride():
    torch.zeros(4, 6).t().view(24)


@case("attention", raise_path="aten/src/ATen/InferSize.h")
def view_numel():
    torch.zeros(3).view(2, 2)


@case("attention", raise_path="aten/src/ATen/InferSize.h")
def view_two_inferred():
    torch.zeros(4, 6).view(-1, -1)


@case("attention")
def expand_heads():
    torch.zeros(2, 3).expand(2, 4)


@case("attention")
def transpose_dim_range():
    torch.zeros(2, 3).transpose(0, 4)


@case("attention")
def layer_norm_shape():
    F.layer_norm(torch.zeros(2, 3, 4), (8,))


@case("attention")
def dropout_probability():
    F.dropout(torch.zeros(3), p=1.5)


@case("attention")
def where_float_condition():
    torch.where(torch.zeros(3), torch.zeros(3), torch.ones(3))


@case("attention")
def causal_mask_triu_1d():
    torch.triu(torch.zeros(3))


# --- KV cache ---------------------------------------------------------------------------------
@case("kv-cache")
def cat_sizes():
    torch.cat([torch.zeros(1, 2, 3, 8), torch.zeros(1, 4, 3, 8)], dim=2)


@case("kv-cache")
def cat_ranks():
    torch.cat([torch.zeros(1, 2, 3, 8), torch.zeros(2, 3, 8)], dim=2)


@case("kv-cache")
def cat_empty():
    torch.cat([])


@case("kv-cache")
def cat_dim_range():
    torch.cat([torch.zeros(2, 3), torch.zeros(2, 3)], dim=5)


@case("kv-cache")
def stack_sizes():
    torch.stack([torch.zeros(2, 3), torch.zeros(2, 4)])


@case("kv-cache")
def index_copy_index_dtype():
    torch.zeros(1, 2, 4, 8).index_copy_(2, torch.tensor([1.0]), torch.zeros(1, 2, 1, 8))


@case("kv-cache")
def index_copy_out_of_bounds():
    torch.zeros(1, 2, 4, 8).index_copy_(2, torch.tensor([9]), torch.zeros(1, 2, 1, 8))


@case("kv-cache")
def index_copy_source_dtype():
    torch.zeros(1, 2, 4, 8).index_copy_(2, torch.tensor([1]), torch.zeros(1, 2, 1, 8, dtype=torch.float64))


@case("kv-cache")
def index_copy_index_2d():
    torch.zeros(1, 2, 4, 8).index_copy_(2, torch.tensor([[1]]), torch.zeros(1, 2, 1, 8))


@case("kv-cache")
def index_copy_source_slices():
    torch.zeros(1, 2, 4, 8).index_copy_(2, torch.tensor([1, 2]), torch.zeros(1, 2, 1, 8))


@case("kv-cache")
def narrow_past_end():
    torch.zeros(1, 2, 6, 8).narrow(2, 5, 3)


@case("kv-cache")
def narrow_negative_length():
    torch.zeros(1, 2, 6, 8).narrow(2, 0, -1)


@case("kv-cache")
def narrow_0d():
    torch.tensor(1.0).narrow(0, 0, 1)


@case("kv-cache")
def index_select_range():
    torch.zeros(4, 8).index_select(0, torch.tensor([7]))


@case("kv-cache")
def index_select_float_index():
    torch.zeros(4, 8).index_select(0, torch.tensor([1.0]))


@case("kv-cache")
def gather_ranks():
    torch.gather(torch.zeros(2, 4), 1, torch.zeros(2, 1, 1, dtype=torch.long))


@case("kv-cache")
def gather_out_of_bounds():
    torch.gather(torch.zeros(2, 4), 1, torch.tensor([[5], [0]]))


@case("kv-cache")
def scatter_index_dtype():
    torch.zeros(2, 4).scatter_(1, torch.tensor([[1.0]]), 1.0)


@case("kv-cache")
def copy_broadcast():
    torch.zeros(1, 2, 4, 8)[:, :, :2].copy_(torch.zeros(1, 2, 3, 8))


@case("kv-cache")
def slice_assign_shape():
    cache = torch.zeros(1, 2, 4, 8)
    cache[:, :, 0:2] = torch.zeros(1, 2, 3, 8)


@case("kv-cache")
def embedding_out_of_range():
    F.embedding(torch.tensor([9]), torch.zeros(4, 8))


@case("kv-cache")
def embedding_float_indices():
    F.embedding(torch.tensor([1.0]), torch.zeros(4, 8))


@case("kv-cache")
def repeat_fewer_dims():
    torch.zeros(2, 3, 4).repeat(2, 2)


@case("kv-cache")
def split_sizes_sum():
    torch.zeros(6, 2).split([2, 2], dim=0)


# --- generation (sampling) --------------------------------------------------------------------
@case("generation")
def multinomial_negative():
    torch.multinomial(torch.tensor([-1.0, 2.0]), 1)


@case("generation")
def multinomial_zero_sum():
    torch.multinomial(torch.tensor([0.0, 0.0]), 1)


@case("generation")
def multinomial_too_many():
    torch.multinomial(torch.tensor([0.5, 0.5]), 3)


@case("generation")
def multinomial_3d():
    torch.multinomial(torch.ones(1, 2, 3), 1)


@case("generation")
def multinomial_no_samples():
    torch.multinomial(torch.ones(3), 0)


@case("generation")
def topk_too_large():
    torch.topk(torch.zeros(2, 5), 7)


@case("generation")
def topk_dim_range():
    torch.topk(torch.zeros(2, 5), 1, dim=3)


@case("generation")
def argmax_empty():
    torch.zeros(0).argmax()


@case("generation")
def softmax_long_logits():
    torch.zeros(3, dtype=torch.long).softmax(-1)


@case("generation")
def randint_range():
    torch.randint(5, 2, (3,))


@case("generation")
def arange_step_sign():
    torch.arange(0, 10, -1)


@case("generation")
def cumsum_dim_range():
    torch.zeros(2, 3).cumsum(4)


@case("generation")
def sort_dim_range():
    torch.zeros(2, 3).sort(dim=4)


@case("generation")
def log_softmax_half_cpu():
    torch.zeros(2, 3, dtype=torch.half).log_softmax(-1)


@case("generation")
def bernoulli_probability():
    torch.bernoulli(torch.zeros(3), p=2.0)


# --- loading misuse ---------------------------------------------------------------------------
def _tmp(name, data):
    d = tempfile.mkdtemp(prefix="errshim-provoke-")
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


@case("loading")
def load_truncated_zip():
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(3)}, buf)
    torch.load(_tmp("model.pt", buf.getvalue()[:200]))


@case("loading")
def load_missing_keys():
    nn.Linear(3, 2).load_state_dict({"weight": torch.zeros(2, 3)})


@case("loading")
def load_size_mismatch():
    nn.Linear(3, 2).load_state_dict({"weight": torch.zeros(4, 3), "bias": torch.zeros(4)})


@case("loading")
def load_unexpected_keys():
    sd = nn.Linear(3, 2).state_dict()
    sd["extra.weight"] = torch.zeros(1)
    nn.Linear(3, 2).load_state_dict(sd)


@case("loading")
def load_state_dict_list():
    nn.Linear(3, 2).load_state_dict([torch.zeros(2, 3)])


@case("loading")
def load_cuda_on_cpu_machine():
    buf = io.BytesIO()
    torch.save(torch.zeros(3), buf)
    buf.seek(0)
    torch.load(buf, map_location="cuda")


@case("loading")
def load_bad_map_location():
    buf = io.BytesIO()
    torch.save(torch.zeros(3), buf)
    buf.seek(0)
    torch.load(buf, map_location="tpu")


@case("loading")
def cuda_not_compiled():
    torch.zeros(1, device="cuda")


@case("loading")
def device_string():
    torch.device("cudax")


@case("loading")
def module_to_int_dtype():
    nn.Linear(3, 2).to(torch.int64)


@case("loading")
def register_buffer_exists():
    m = nn.Linear(3, 2)
    m.register_buffer("weight", torch.zeros(1))


@case("loading")
def register_buffer_dotted():
    nn.Linear(3, 2).register_buffer("a.b", torch.zeros(1))


@case("loading")
def add_module_dotted():
    nn.Module().add_module("a.b", nn.Linear(3, 2))


@case("loading")
def get_submodule_missing():
    nn.Sequential(nn.Linear(3, 2)).get_submodule("0.proj")


@case("loading")
def get_parameter_missing():
    nn.Linear(3, 2).get_parameter("scale")


@case("loading")
def jit_load_bad_file():
    torch.jit.load(_tmp("model.pt", b"not a zip archive at all, just text"))


@case("loading")
def parameter_assign_tensor():
    m = nn.Linear(3, 2)
    m.weight = torch.zeros(2, 3)


def run(fn, warning):
    """(text, python class) of what the case raises (or warns)."""
    if warning:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            fn()
        if not got:
            return None, None
        w = got[0]
        return warnings.formatwarning(w.message, w.category, w.filename, w.lineno, "").rstrip(), \
            w.category.__name__
    try:
        fn()
    except Exception as e:  # every case is meant to raise
        return "".join(traceback.format_exception(type(e), e, e.__traceback__)).rstrip(), type(e).__name__
    return None, None


CPP_AT = re.compile(r"(?:Exception raised from \S+ at|Triggered internally at) \.?/?((?:build/)?[\w./+-]+?):(\d+)")
PY_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def raised_at(text):
    """(path, line, how) where torch's own output says the error comes from."""
    m = CPP_AT.search(text)
    if m:
        return m.group(1), int(m.group(2)), "c++"
    last = None
    for f, line, _ in PY_FRAME.findall(text):
        if f.startswith(TORCH_DIR + os.sep):
            last = (os.path.relpath(f, PKG_ROOT).replace(os.sep, "/"), int(line), "python")
    m = re.match(r"(%s/[^:]+\.py):(\d+): " % re.escape(TORCH_DIR), text)
    if m:
        return os.path.relpath(m.group(1), PKG_ROOT).replace(os.sep, "/"), int(m.group(2)), "python"
    return last if last else (None, None, None)


def main():
    only = None
    if len(sys.argv) > 2 and sys.argv[1] == "--only":
        only = set(sys.argv[2].split(","))
    out = []
    for name, group, fn, raise_path, warning in CASES:
        if only and name not in only:
            continue
        text, cls = run(fn, warning)
        path, line, how = raised_at(text) if text else (None, None, None)
        out.append({"name": name, "group": group, "kind": "warning" if warning else "error", "text": text,
                    "python_class": cls, "raised_path": path, "raised_line": line, "raised_how": how,
                    "raise_path": raise_path})
    json.dump(out, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
