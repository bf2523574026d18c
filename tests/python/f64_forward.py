"""An independent F64 forward pass in numpy for llama, qwen2 and qwen3 GGUF
files (weights dequantized by the gguf package). Slow; meant for the tiny
random models, as the arbiter of which implementation is closer to exact."""
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

from run_cache import cached, file_key


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def load(path):
    r = GGUFReader(str(path))
    arch = _field(r, "general.architecture")
    hp = {k: _field(r, f"{arch}.{k}") for k in (
        "embedding_length", "block_count", "attention.head_count", "attention.head_count_kv",
        "rope.freq_base", "attention.layer_norm_rms_epsilon", "attention.key_length")}
    w = {t.name: dequantize(t.data, t.tensor_type).astype(np.float64).reshape(
        [int(d) for d in reversed(t.shape)]) for t in r.tensors}
    return arch, hp, w


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, pos, base, neox):
    # x [n_tok, n_heads, head_dim]
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = pos[:, None].astype(np.float64) * inv[None, :]        # [n_tok, d/2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if neox:
        a, b = x[..., : d // 2], x[..., d // 2:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * c - b * s, a * s + b * c
    return out


def stored(t, cache):
    """K or V [n, heads, head_dim] as a KV cache of type `cache` holds them:
    rounded to f16 or bf16 (to nearest, ties to even), or q8_0 blocks of 32
    (scale amax / 127 kept as f16, values rounded half away from zero)."""
    if cache in (None, "f32"):
        return t
    if cache == "f16":
        return t.astype(np.float16).astype(np.float64)
    if cache == "bf16":
        bits = t.astype(np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if cache == "q8_0":
        b = t.reshape(*t.shape[:-1], -1, 32)
        d = np.abs(b).max(-1, keepdims=True) / 127
        y = np.divide(b, d, out=np.zeros_like(b), where=d > 0)
        q = np.sign(y) * np.floor(np.abs(y) + 0.5)
        return (q * d.astype(np.float16).astype(np.float64)).reshape(t.shape)
    raise ValueError(f"unknown cache type {cache}")


def forward(path, ids, cache=None):
    """_forward, computed once per test run (run_cache.py)."""
    ids = [int(i) for i in ids]
    return cached("f64", (file_key(path), ids, cache), lambda: _forward(path, ids, cache))


def _forward(path, ids, cache=None):
    """Logits of every position in F64; with `cache`, K and V are rounded as
    a KV cache of that type stores them (the rest stays F64)."""
    arch, hp, w = load(path)
    n_head, n_kv = hp["attention.head_count"], hp["attention.head_count_kv"]
    eps, base = hp["attention.layer_norm_rms_epsilon"], hp["rope.freq_base"]
    hd = hp["attention.key_length"] or hp["embedding_length"] // n_head
    n = len(ids)
    pos = np.arange(n)
    x = w["token_embd.weight"][np.asarray(ids)]
    mask = np.triu(np.full((n, n), -np.inf), 1)
    for il in range(hp["block_count"]):
        p = f"blk.{il}."
        h = rms_norm(x, w[p + "attn_norm.weight"], eps)
        q, k, v = (h @ w[p + f"attn_{m}.weight"].T for m in "qkv")
        if arch == "qwen2":
            q, k, v = (t + w[p + f"attn_{m}.bias"] for t, m in zip((q, k, v), "qkv"))
        q, k, v = q.reshape(n, n_head, hd), k.reshape(n, n_kv, hd), v.reshape(n, n_kv, hd)
        if arch == "qwen3":
            q = rms_norm(q, w[p + "attn_q_norm.weight"], eps)
            k = rms_norm(k, w[p + "attn_k_norm.weight"], eps)
        q, k = rope(q, pos, base, arch != "llama"), rope(k, pos, base, arch != "llama")
        k, v = stored(k, cache), stored(v, cache)
        g = n_head // n_kv
        k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = np.einsum("hts,shd->thd", s, v).reshape(n, n_head * hd)
        x = x + a @ w[p + "attn_output.weight"].T
        h = rms_norm(x, w[p + "ffn_norm.weight"], eps)
        gate, up = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "ffn_down.weight"].T
    h = rms_norm(x, w["output_norm.weight"], eps)
    out = w.get("output.weight", w["token_embd.weight"])
    return h @ out.T
