"""A small language model on torch for the tests: one attention block with
grouped-query heads, a KV cache (dynamic, grown with torch.cat, or static,
written with index_copy_), learned positions, and a greedy generation loop.
Every knob is a key of a plain config dict, so that errshim's fixes, which
change config keys, can be applied to it. Not a test module itself.
"""

import math

import torch
from torch import nn

BASE = {
    "vocab_size": 40,
    "hidden_size": 32,
    "num_heads": 4,
    "num_kv_heads": 4,
    "head_dim": 8,
    "kv_head_dim": 8,
    "max_position_embeddings": 32,
    "dtype": "float32",
    "cache_implementation": "dynamic",
    "cache_dtype": "float32",
    "max_cache_len": 32,
    "mask_dtype": "bool",
}

_DTYPES = {
    "float32": torch.float32, "float": torch.float32, "float16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "float64": torch.float64, "double": torch.float64, "bool": torch.bool,
}


def dtype_of(name):
    """torch's dtype for a config value: "float32" or torch's own name as
    messages print it ("Float", "Half")."""
    return _DTYPES[str(name).lower()]


def config(**changes):
    c = dict(BASE)
    c.update(changes)
    return c


class DynamicCache:
    def __init__(self, k=None, v=None):
        self.k, self.v = k, v

    def update(self, pos, k, v):
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = torch.cat([self.k, k], dim=2)
            self.v = torch.cat([self.v, v], dim=2)
        return self.k, self.v


class StaticCache:
    def __init__(self, cfg):
        shape = (1, int(cfg["num_kv_heads"]), int(cfg["max_cache_len"]), int(cfg["kv_head_dim"]))
        self.k = torch.zeros(shape, dtype=dtype_of(cfg["cache_dtype"]))
        self.v = torch.zeros(shape, dtype=dtype_of(cfg["cache_dtype"]))

    def update(self, pos, k, v):
        index = torch.arange(pos, pos + k.shape[2])
        self.k.index_copy_(2, index, k)
        self.v.index_copy_(2, index, v)
        end = pos + k.shape[2]
        return self.k[:, :, :end], self.v[:, :, :end]


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, hd = int(cfg["hidden_size"]), int(cfg["head_dim"])
        self.heads, self.kv_heads = int(cfg["num_heads"]), int(cfg["num_kv_heads"])
        self.head_dim, self.kv_head_dim = hd, int(cfg["kv_head_dim"])
        self.mask_dtype = dtype_of(cfg["mask_dtype"])
        self.q = nn.Linear(h, self.heads * hd)
        self.k = nn.Linear(h, self.kv_heads * self.kv_head_dim)
        self.v = nn.Linear(h, self.kv_heads * self.kv_head_dim)
        self.o = nn.Linear(self.heads * hd, h)

    def forward(self, x, cache, pos):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.kv_head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.kv_head_dim).transpose(1, 2)
        k, v = cache.update(pos, k, v)
        repeat = self.heads // self.kv_heads  # grouped-query attention, integer division as models do
        if repeat > 1:
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        total = k.shape[2]
        allowed = torch.ones(t, total, dtype=torch.bool).tril(total - t).to(self.mask_dtype)
        scores = torch.where(allowed, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, self.heads * self.head_dim)
        return self.o(out)


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = int(cfg["hidden_size"])
        self.embed = nn.Embedding(int(cfg["vocab_size"]), h)
        self.positions = nn.Embedding(int(cfg["max_position_embeddings"]), h)
        self.attention = Attention(cfg)
        self.head = nn.Linear(h, int(cfg["vocab_size"]))

    def forward(self, ids, cache, pos):
        x = self.embed(ids) + self.positions(torch.arange(pos, pos + ids.shape[1]))
        x = x + self.attention(x, cache, pos)
        return self.head(x)


def build(cfg):
    torch.manual_seed(0)  # the same weights for every config of the same shapes
    return TinyLM(cfg).to(dtype_of(cfg["dtype"])).eval()


PROMPT = [3, 1, 4, 1, 5]


def generate(cfg, prompt=PROMPT, max_new_tokens=6, cache=None):
    """Greedy generation; returns the token ids, prompt included."""
    model = build(cfg)
    if cache is None:
        cache = StaticCache(cfg) if cfg["cache_implementation"] == "static" else DynamicCache()
    with torch.no_grad():
        out = list(prompt)
        logits = model(torch.tensor([prompt]), cache, 0)
        pos = len(prompt)
        for _ in range(max_new_tokens):
            token = int(logits[0, -1].argmax())
            out.append(token)
            logits = model(torch.tensor([[token]]), cache, pos)
            pos += 1
    return out
