#!/usr/bin/env python3
"""PyTorch's loss and gradients for batches of graphs at an spn model
checkpoint: torch_spn.py's SPN, given the checkpoint's parameters.

spn's test models/spn (TestSameGradientsAsPyTorch) writes the three
inputs, runs this script and compares each batch's loss and gradients
with its own: an independent implementation of the model that the speed
comparison times (scripts/bench/torch_spn.py), checked to compute what
spn computes.

    torch_grads.py GRAPHS.jsonl CHECKPOINT.json BATCHES.json [--threads 1]

GRAPHS.jsonl: graphs of spn's JSON Lines format (`spn data export`).
CHECKPOINT.json: an spn checkpoint of kind "spn" or "gin" (sum pooling,
learnable eps, dropout 0, none of global_readout, gated_readout, linear):
its config gives k and the layers, its parameters the model's (spn
stores a linear map's weight as in x out, PyTorch as out x in). GIN is
the SPN with k = 1: the nodes at distance 1 are the neighbours.
BATCHES.json: a list of batches, each a list of graph indices (from 0,
in GRAPHS.jsonl's order).

Output: one JSON line per batch, {"batch": i, "loss": x, "grads": {NAME:
[...]}, "loss_err32": e, "grad_err32": {NAME: e}}: the mean cross-entropy
of the batch in training mode (batch statistics) and the gradient of
every parameter, by the checkpoint's names and in its layout, computed in
float64; and how far the same computed in float32 is from them (the
Euclidean norm of the difference), which measures how much float32
rounding the batch's figures suffer. The parameters do not change
between batches.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_spn  # noqa: E402 (the model, its collation and hop sets)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def pairs(model, layers):
    """Yields (checkpoint name, the model's parameter, transposed) for
    every parameter of torch_spn.SPN."""
    yield "enc.emb", model.enc.weight, True
    yield "enc.b", model.enc.bias, False
    for l, layer in enumerate(model.layers):
        ck = f"layer{l + 1}"
        yield f"{ck}.agg.alpha_logits", layer.alpha, False
        yield f"{ck}.agg.eps", layer.eps, False
        # mlp: 0 Linear, 1 BatchNorm, 2 ReLU, 3 Linear, 4 BatchNorm, 5 ReLU.
        for i, (lin, bn) in enumerate([(0, 1), (3, 4)], 1):
            yield f"{ck}.lin{i}.w", layer.mlp[lin].weight, True
            yield f"{ck}.lin{i}.b", layer.mlp[lin].bias, False
            yield f"{ck}.bn{i}.gamma", layer.mlp[bn].weight, False
            yield f"{ck}.bn{i}.beta", layer.mlp[bn].bias, False
    for t, lin in enumerate(model.readout):
        yield f"readout{t}.w", lin.weight, True
        yield f"readout{t}.b", lin.bias, False


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("jsonl")
    p.add_argument("checkpoint")
    p.add_argument("batches")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)

    with open(a.checkpoint) as f:
        ck = json.load(f)
    if ck.get("format") != "spn-model":
        sys.exit(f"{a.checkpoint}: not an spn model checkpoint")
    m = ck["config"]["model"]
    if m.get("kind") not in ("spn", "gin") or m.get("pool") != "sum" or not m.get("learn_eps") or m.get("dropout") \
            or any(m.get(f) for f in ("global_readout", "gated_readout", "linear")):
        sys.exit(f"{a.checkpoint}: want kind spn or gin, pool sum, learn_eps, dropout 0, "
                 f"none of global_readout, gated_readout, linear; got {m}")
    params = {p["name"]: torch.tensor(p["values"], dtype=torch.float32).reshape(p["shape"]) for p in ck["params"]}
    k, layers = m["k"], m["layers"]
    labels, hidden = params["enc.emb"].shape
    classes = params["readout0.b"].shape[0]

    graphs = torch_spn.load(a.jsonl)
    cpu = torch.device("cpu")
    items = [(n, torch.tensor(x, dtype=torch.long), y, torch_spn.hop_sets(n, e, k, cpu)) for n, e, x, y in graphs]
    with open(a.batches) as f:
        batches = json.load(f)
    # The model twice: in float64, the reference, and in float32, whose
    # distance from it says how much float32 rounding the batch's
    # gradients suffer (a batch norm divides by a feature's spread).
    models = {}
    for dtype in (torch.float64, torch.float32):
        model = torch_spn.SPN(labels, hidden, classes, layers, k, 0.0).to(dtype)
        mapped = list(pairs(model, layers))
        if sorted(n for n, _, _ in mapped) != sorted(params) or len(mapped) != len(list(model.parameters())):
            sys.exit(f"{a.checkpoint}: parameters {sorted(params)} do not map onto torch_spn.SPN's")
        with torch.no_grad():
            for name, t, tr in mapped:
                v = params[name].T if tr else params[name]
                if t.shape != v.shape:
                    sys.exit(f"{a.checkpoint}: {name}: shape {tuple(params[name].shape)} does not fit {tuple(t.shape)}")
                t.copy_(v)
        model.train()
        models[dtype] = (model, mapped)

    for i, idx in enumerate(batches):
        x, hops, batch, y = torch_spn.collate([items[j] for j in idx], labels, k, cpu)
        out = {}
        for dtype, (model, mapped) in models.items():
            model.zero_grad()
            loss = F.cross_entropy(model(x.to(dtype), hops, batch, len(idx)), y)
            loss.backward()
            out[dtype] = loss.item(), {name: (t.grad.T if tr else t.grad).flatten().double() for name, t, tr in mapped}
        (l64, g64), (l32, g32) = out[torch.float64], out[torch.float32]
        print(json.dumps({"batch": i, "loss": l64, "loss_err32": abs(l32 - l64),
                          "grads": {n: g.tolist() for n, g in g64.items()},
                          "grad_err32": {n: (g32[n] - g).norm().item() for n, g in g64.items()}}), flush=True)

if __name__ == "__main__":
    main()
