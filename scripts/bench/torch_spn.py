#!/usr/bin/env python3
"""PyTorch reference for `spn bench`: one training epoch of an SPN or E-SPN.

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

With --kind espn the model is E-SPN (models/espn), as
scripts/bench/torch_grads.py writes it: h^(0) = the sum of one embedding
per categorical atom feature ("node_feat") plus a bias, and

    h_u <- MLP((1+eps) h_u + alpha_1 sum_{v in N(u)} ReLU(h_v + e_uv)
                           + sum_{i=2..k} alpha_i sum_{v in N_i(u)} h_v)

with e_uv the sum of one embedding per bond feature ("edge_feat"), tables
of their own in every layer. Graphs with "target" (multi-label 0/1, e.g.
Peptides-func) train with the binary cross-entropy on logits.

On a GPU (--device cuda), the model, the batches and the optimiser live
on the device and the clock stops after torch.cuda.synchronize(). Two
ways to feed it (--modes): "collate" collates each batch on the CPU
inside the timed loop and copies it over, as a DataLoader does;
"precollate" (or the flag --precollate) collates every batch of a fixed
order once, copies them all to the device before the clock starts, and
times the training steps alone (the best case for PyTorch). --warmup
epochs run untimed first (kernel selection, caches).

One process can time several shapes and modes of one dataset (--shapes
64x32,300x128 --modes collate,precollate): the dataset is read and its
hop sets computed once (on the device when it is a GPU), then each shape
and mode trains a fresh model from the same seed and prints its line.

Input: a dataset written by `spn data export NAME --format jsonl`.
Output: one JSON line per run with graphs/s and graphs per CPU-second of
the process (steadier on a shared machine), and a human line on stderr.

Usage: torch_spn.py FILE.jsonl [--name NAME] [--kind spn|espn] [--k 5] [--layers 5]
       [--hidden 64] [--batch 32] [--shapes HxB,...] [--epochs 1]
       [--threads 2] [--seed 1] [--device cpu|cuda|cuda:N]
       [--precollate | --modes collate,precollate] [--warmup 0]
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


def load(path, kind):
    """Reads JSONL graphs: (n, edges, labels, y) for spn, (n, edges,
    node_feat, edge_feat, y) for espn; y is a class, or a list of 0/1
    targets where the graph has "target"."""
    graphs = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                g = json.loads(line)
                n = int(g["nodes"])
                edges = [(int(u), int(v)) for u, v in g.get("edges", [])]
                y = [float(t) for t in g["target"]] if "target" in g else int(g["y"])
                if kind == "espn":
                    nf = [[int(c) for c in row] for row in g["node_feat"]]
                    ef = [[int(c) for c in row] for row in g["edge_feat"]]
                else:
                    x = [int(v) for v in g.get("x", [0] * n)]
            except (KeyError, ValueError, TypeError) as e:
                sys.exit(f"{path}:{lineno}: not a labelled graph of spn's JSONL format for --kind {kind}: {e!r}")
            if any(not (0 <= u < n and 0 <= v < n) for u, v in edges):
                sys.exit(f"{path}:{lineno}: edges do not match nodes = {n}")
            if kind == "espn":
                if len(nf) != n or len(ef) != len(edges):
                    sys.exit(f"{path}:{lineno}: node_feat or edge_feat do not match nodes = {n} and the edges")
                graphs.append((n, edges, nf, ef, y))
            else:
                if len(x) != n:
                    sys.exit(f"{path}:{lineno}: node labels do not match nodes = {n}")
                graphs.append((n, edges, x, y))
    if not graphs:
        sys.exit(f"{path}: no graphs")
    return graphs


def hop_sets(n, edges, k, device):
    """Returns [(src, dst)] for i = 1..k, on the CPU: dst at distance
    exactly i from src, by dense boolean frontier expansion on device."""
    with torch.no_grad():
        return [(s.cpu(), d.cpu()) for s, d in _hop_sets(n, edges, k, device)]


def _hop_sets(n, edges, k, device):
    a = torch.zeros(n, n, device=device)
    if edges:
        e = torch.tensor(edges, dtype=torch.long, device=device)
        a[e[:, 0], e[:, 1]] = 1
        a[e[:, 1], e[:, 0]] = 1
    seen = torch.eye(n, dtype=torch.bool, device=device)
    frontier = torch.eye(n, device=device)
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
            pooled = h.new_zeros(num_graphs, h.shape[1]).index_add_(0, batch, h)
            out = out + F.dropout(lin(pooled), self.dropout, self.training)
        return out


class ESPNLayer(nn.Module):
    def __init__(self, hidden, k, bond_rows):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.alpha = nn.Parameter(torch.zeros(k))
        self.bond = nn.Embedding(bond_rows, hidden)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
        )

    def forward(self, h, adj, edge_feat, hops):
        alpha = torch.softmax(self.alpha, 0)
        u, v = adj
        msg = F.relu(h[v] + self.bond(edge_feat).sum(1))
        agg = (1 + self.eps) * h + alpha[0] * torch.zeros_like(h).index_add_(0, u, msg)
        for i, (src, dst) in enumerate(hops[1:], 1):
            agg = agg + alpha[i] * torch.zeros_like(h).index_add_(0, dst, h[src])
        return self.mlp(agg)


class ESPN(nn.Module):
    def __init__(self, node_vocab, edge_vocab, hidden, out, layers, k, dropout):
        super().__init__()
        self.register_buffer("node_off", torch.tensor([sum(node_vocab[:c]) for c in range(len(node_vocab))]))
        self.register_buffer("edge_off", torch.tensor([sum(edge_vocab[:c]) for c in range(len(edge_vocab))]))
        self.atom = nn.Embedding(sum(node_vocab), hidden)
        self.enc_b = nn.Parameter(torch.zeros(hidden))
        self.layers = nn.ModuleList(ESPNLayer(hidden, k, sum(edge_vocab)) for _ in range(layers))
        self.readout = nn.ModuleList(nn.Linear(hidden, out) for _ in range(layers + 1))
        self.dropout = dropout

    def forward(self, x, hops, batch, num_graphs):
        node_cat, adj, edge_feat = x
        h = self.atom(node_cat + self.node_off).sum(1) + self.enc_b
        edge_feat = edge_feat + self.edge_off
        hs = [h]
        for layer in self.layers:
            h = layer(h, adj, edge_feat, hops)
            hs.append(h)
        out = 0
        for h, lin in zip(hs, self.readout):
            pooled = h.new_zeros(num_graphs, h.shape[1]).index_add_(0, batch, h)
            out = out + F.dropout(lin(pooled), self.dropout, self.training)
        return out


def espn_item(n, edges, nf, ef, y, k, device):
    """One E-SPN graph: its atom features, its bonds in both directions
    with their features, and its hop sets."""
    adj = [(u, v) for u, v in edges] + [(v, u) for u, v in edges]
    return (n, torch.tensor(nf, dtype=torch.long).reshape(n, -1), y, hop_sets(n, edges, k, device),
            torch.tensor(adj, dtype=torch.long).reshape(-1, 2), torch.tensor(ef + ef, dtype=torch.long).reshape(len(adj), -1))


def target(ys):
    """The batch's targets: class indices, or a float matrix of 0/1."""
    return torch.tensor(ys, dtype=torch.float if isinstance(ys[0], list) else torch.long)


def collate_espn(items, k, device):
    """collate for E-SPN items (espn_item)."""
    cats, ys, batch, adjs, efs = [], [], [], [], []
    srcs, dsts = [[] for _ in range(k)], [[] for _ in range(k)]
    off = 0
    for gi, (n, nc, y, hops, adj, ef) in enumerate(items):
        cats.append(nc)
        ys.append(y)
        batch.append(torch.full((n,), gi, dtype=torch.long))
        adjs.append(adj + off)
        efs.append(ef)
        for i, (s, d) in enumerate(hops):
            srcs[i].append(s + off)
            dsts[i].append(d + off)
        off += n
    adj = torch.cat(adjs)
    hops = [(torch.cat(s), torch.cat(d)) for s, d in zip(srcs, dsts)]
    to = lambda t: t.to(device, non_blocking=True)  # noqa: E731
    x = (to(torch.cat(cats)), (to(adj[:, 0]), to(adj[:, 1])), to(torch.cat(efs)))
    return x, [(to(s), to(d)) for s, d in hops], to(torch.cat(batch)), to(target(ys))


def collate(items, labels, k, device):
    """Concatenates graphs into one batch, offsetting the hop indices, and
    moves it to device."""
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
    to = lambda t: t.to(device, non_blocking=True)  # noqa: E731
    return to(x), [(to(s), to(d)) for s, d in hops], to(torch.cat(batch)), to(target(ys))


def cpu_seconds():
    """User + system CPU time of the process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("jsonl")
    p.add_argument("--name", default="")
    p.add_argument("--kind", default="spn", choices=("spn", "espn"))
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--shapes", default="",
                   help="comma-separated HIDDENxBATCH pairs to time one after the other (default: --hidden x --batch)")
    p.add_argument("--precollate", action="store_true",
                   help="collate every batch once, on the device, before the clock starts (--modes precollate)")
    p.add_argument("--modes", default="",
                   help="comma-separated feeding modes to time: collate, precollate (default: collate, or precollate with --precollate)")
    p.add_argument("--warmup", type=int, default=0, help="untimed epochs first")
    a = p.parse_args()
    for flag in ("k", "layers", "hidden", "batch", "epochs", "threads"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag} must be at least 1")
    if a.warmup < 0:
        p.error("--warmup must not be negative")
    shapes = [(a.hidden, a.batch)]
    if a.shapes:
        try:
            shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
        except ValueError:
            shapes = []
        if not shapes or any(len(s) != 2 or min(s) < 1 for s in shapes):
            p.error(f"--shapes {a.shapes}: want HIDDENxBATCH pairs of positive integers, comma-separated")
    if a.modes and a.precollate:
        p.error("--precollate and --modes: give one")
    modes = a.modes.split(",") if a.modes else ["precollate" if a.precollate else "collate"]
    if any(m not in ("collate", "precollate") for m in modes):
        p.error(f"--modes {a.modes}: want collate and/or precollate")
    try:
        device = torch.device(a.device)
    except RuntimeError as e:
        p.error(f"--device {a.device}: {e}")
    if device.type == "cuda" and not torch.cuda.is_available():
        p.error(f"--device {a.device}: torch {torch.__version__} sees no CUDA device")
    if device.type not in ("cpu", "cuda"):
        p.error(f"--device {a.device}: want cpu, cuda or cuda:N")
    torch.set_num_threads(a.threads)

    graphs = load(a.jsonl, a.kind)
    ys = [g[-1] for g in graphs]
    classes = len(ys[0]) if isinstance(ys[0], list) else max(ys) + 1
    if a.kind == "espn":
        vocab = lambda rows, w: [max((r[c] for g in rows for r in g), default=0) + 1 for c in range(w)]  # noqa: E731
        labels = (vocab([g[2] for g in graphs], len(graphs[0][2][0])), vocab([g[3] for g in graphs if g[3]], 3 if not graphs[0][3] else len(graphs[0][3][0])))
        items = [espn_item(n, e, nf, ef, y, a.k, device) for n, e, nf, ef, y in graphs]
    else:
        labels = max(max(x) if x else 0 for _, _, x, _ in graphs) + 1
        items = [(n, torch.tensor(x, dtype=torch.long), y, hop_sets(n, e, a.k, device)) for n, e, x, y in graphs]
    for hidden, batch in shapes:
        for mode in modes:
            run(a, device, items, labels, classes, hidden, batch, mode == "precollate")


def run(a, device, items, labels, classes, hidden, batch, precollate):
    """Trains a fresh model of width hidden (seeded by --seed) on items in
    batches of batch, a.warmup epochs untimed then a.epochs timed, and
    prints its lines."""
    torch.manual_seed(a.seed)
    if a.kind == "espn":
        model = ESPN(labels[0], labels[1], hidden, classes, a.layers, a.k, a.dropout).to(device)
    else:
        model = SPN(labels, hidden, classes, a.layers, a.k, a.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    model.train()

    def step(x, hops, batch, y, num_graphs):
        opt.zero_grad()
        out = model(x, hops, batch, num_graphs)
        loss = F.binary_cross_entropy_with_logits(out, y) if y.is_floating_point() else F.cross_entropy(out, y)
        loss.backward()
        opt.step()

    def batches():
        """Yields each batch of one epoch in a fresh random order."""
        order = torch.randperm(len(items)).tolist()
        for lo in range(0, len(order), batch):
            chunk = [items[i] for i in order[lo:lo + batch]]
            b = collate_espn(chunk, a.k, device) if a.kind == "espn" else collate(chunk, labels, a.k, device)
            yield b + (len(chunk),)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fixed = list(batches()) if precollate else None  # one order, reused by every epoch
    epoch = (lambda: fixed) if precollate else batches
    for _ in range(a.warmup):
        for b in epoch():
            step(*b)
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    for _ in range(a.epochs):
        for b in epoch():
            step(*b)
    sync()
    secs = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    rate = len(items) * a.epochs / secs
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gpu_mb = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    name = a.name or a.jsonl
    where = f"{a.threads} threads" if device.type == "cpu" else f"{torch.cuda.get_device_name(device)}"
    feed = ", pre-collated" if precollate else ""
    gpu = f", GPU peak {gpu_mb:.0f} MB" if gpu_mb is not None else ""
    print(f"{name} (hidden {hidden}, batch {batch}): {len(items)} graphs, {a.epochs} epoch(s) in {secs:.2f} s: {rate:.0f} graphs/s, "
          f"peak RSS {peak_mb:.0f} MB{gpu} (torch {torch.__version__}, {where}{feed})", file=sys.stderr)
    print(json.dumps({"workload": name, "kind": a.kind, "k": a.k, "graphs": len(items), "epochs": a.epochs, "hidden": hidden, "batch": batch,
                      "train_seconds": secs, "graphs_per_second": rate,
                      "graphs_per_cpu_second": len(items) * a.epochs / cpu, "peak_rss_mb": peak_mb, "torch": torch.__version__,
                      "threads": a.threads, "device": str(device), "precollate": precollate,
                      "warmup": a.warmup, "gpu_peak_mb": gpu_mb}), flush=True)

if __name__ == "__main__":
    main()
