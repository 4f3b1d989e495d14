#!/usr/bin/env python3
"""PyTorch CPU reference for `spn bench`: one training epoch of an SPN.

The model is the one spn trains (models/spn.go), written the way PyTorch
Geometric users write message passing, with one index_add_ per hop and no
PyG dependency:

    h_u <- MLP((1+eps) h_u + sum_{i=1..k} alpha_i sum_{v in N_i(u)} h_v)
    MLP  = Linear -> BatchNorm -> ReLU -> Linear -> BatchNorm -> ReLU
    out  = sum_{t=0..L} Dropout(Linear_t(sum-pool(h^(t))))

with alpha = softmax of k logits, h^(0) = Linear(one-hot node label),
cross-entropy loss and Adam. N_i(u) are the nodes at shortest-path distance
exactly i from u, computed before the timed epoch (as spn's precompute
stage does). The timed loop covers what spn bench times: shuffling,
collating each batch (offsetting the hop indices, as PyG's DataLoader
does), forward, loss, backward and the optimiser step.

Input: a dataset written by `spn data export NAME --format jsonl`.
Output: one JSON line per run with graphs/s and graphs per CPU-second of
the process (steadier on a shared machine), and a human line on stderr.

Usage: torch_spn.py FILE.jsonl [--name NAME] [--k 5] [--layers 5]
       [--hidden 64] [--batch 32] [--epochs 1] [--threads 2] [--seed 1]
"""

import argparse
import json
import os
import resource
import sys
import time

# GNU OpenMP's default is to spin while waiting for work; on a machine
# shared with other jobs (or with more threads than free cores) that makes
# every op wait for descheduled spinners: measured here, 8 graphs/s instead
# of 72 on 200 PROTEINS graphs. Passive waiting is the fair setting for a
# comparison on a busy machine; set OMP_WAIT_POLICY yourself to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402 (after the OpenMP setting)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load(path):
    """Reads JSONL graphs: (n, edges, labels, y)."""
    graphs = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                g = json.loads(line)
                n = int(g["nodes"])
                edges = [(int(u), int(v)) for u, v in g.get("edges", [])]
                x = [int(v) for v in g.get("x", [0] * n)]
                y = int(g["y"])
            except (KeyError, ValueError, TypeError) as e:
                sys.exit(f"{path}:{lineno}: not a classification graph of spn's JSONL format: {e!r}")
            if len(x) != n or any(not (0 <= u < n and 0 <= v < n) for u, v in edges):
                sys.exit(f"{path}:{lineno}: node labels or edges do not match nodes = {n}")
            graphs.append((n, edges, x, y))
    if not graphs:
        sys.exit(f"{path}: no graphs")
    return graphs


def hop_sets(n, edges, k):
    """Returns [(src, dst)] for i = 1..k: dst at distance exactly i from src,
    by dense boolean frontier expansion."""
    with torch.no_grad():
        return _hop_sets(n, edges, k)


def _hop_sets(n, edges, k):
    a = torch.zeros(n, n)
    if edges:
        e = torch.tensor(edges, dtype=torch.long)
        a[e[:, 0], e[:, 1]] = 1
        a[e[:, 1], e[:, 0]] = 1
    seen = torch.eye(n, dtype=torch.bool)
    frontier = torch.eye(n)
    out = []
    for _ in range(k):
        reach = (frontier @ a) > 0
        new = reach & ~seen
        seen |= new
        frontier = new.float()
        # index_add_ into row u of the sum over v in N_i(u): dst = u, src = v.
        dst, src = new.nonzero(as_tuple=True)
        out.append((src, dst))
    return out


class SPNLayer(nn.Module):
    def __init__(self, hidden, k):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.alpha = nn.Parameter(torch.zeros(k))
        self.mlp = nn.Sequential(
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
        )

    def forward(self, h, hops):
        alpha = torch.softmax(self.alpha, 0)
        agg = (1 + self.eps) * h
        for i, (src, dst) in enumerate(hops):
            agg = agg + alpha[i] * torch.zeros_like(h).index_add_(0, dst, h[src])
        return self.mlp(agg)


class SPN(nn.Module):
    def __init__(self, labels, hidden, classes, layers, k, dropout):
        super().__init__()
        self.enc = nn.Linear(labels, hidden)
        self.layers = nn.ModuleList(SPNLayer(hidden, k) for _ in range(layers))
        self.readout = nn.ModuleList(nn.Linear(hidden, classes) for _ in range(layers + 1))
        self.dropout = dropout

    def forward(self, x, hops, batch, num_graphs):
        h = self.enc(x)
        hs = [h]
        for layer in self.layers:
            h = layer(h, hops)
            hs.append(h)
        out = 0
        for h, lin in zip(hs, self.readout):
            pooled = torch.zeros(num_graphs, h.shape[1]).index_add_(0, batch, h)
            out = out + F.dropout(lin(pooled), self.dropout, self.training)
        return out


def collate(items, labels, k):
    """Concatenates graphs into one batch, offsetting the hop indices."""
    xs, ys, batch = [], [], []
    srcs, dsts = [[] for _ in range(k)], [[] for _ in range(k)]
    off = 0
    for gi, (n, x, y, hops) in enumerate(items):
        xs.append(x)
        ys.append(y)
        batch.append(torch.full((n,), gi, dtype=torch.long))
        for i, (s, d) in enumerate(hops):
            srcs[i].append(s + off)
            dsts[i].append(d + off)
        off += n
    x = F.one_hot(torch.cat(xs), labels).float()
    hops = [(torch.cat(s), torch.cat(d)) for s, d in zip(srcs, dsts)]
    return x, hops, torch.cat(batch), torch.tensor(ys)


def cpu_seconds():
    """User + system CPU time of the process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("jsonl")
    p.add_argument("--name", default="")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    for flag in ("k", "layers", "hidden", "batch", "epochs", "threads"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag} must be at least 1")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    graphs = load(a.jsonl)
    labels = max(max(x) if x else 0 for _, _, x, _ in graphs) + 1
    classes = max(y for *_, y in graphs) + 1
    items = [(n, torch.tensor(x, dtype=torch.long), y, hop_sets(n, e, a.k)) for n, e, x, y in graphs]

    model = SPN(labels, a.hidden, classes, a.layers, a.k, a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    model.train()
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    for _ in range(a.epochs):
        order = torch.randperm(len(items)).tolist()
        for lo in range(0, len(order), a.batch):
            chunk = [items[i] for i in order[lo:lo + a.batch]]
            x, hops, batch, y = collate(chunk, labels, a.k)
            opt.zero_grad()
            loss = F.cross_entropy(model(x, hops, batch, len(chunk)), y)
            loss.backward()
            opt.step()
    secs = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    rate = len(items) * a.epochs / secs
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    name = a.name or a.jsonl
    print(f"{name}: {len(items)} graphs, {a.epochs} epoch(s) in {secs:.2f} s: {rate:.0f} graphs/s, "
          f"peak RSS {peak_mb:.0f} MB (torch {torch.__version__}, {a.threads} threads)", file=sys.stderr)
    print(json.dumps({"workload": name, "graphs": len(items), "epochs": a.epochs, "train_seconds": secs,
                      "graphs_per_second": rate,
                      "graphs_per_cpu_second": len(items) * a.epochs / cpu, "peak_rss_mb": peak_mb, "torch": torch.__version__,
                      "threads": a.threads}))


if __name__ == "__main__":
    main()
