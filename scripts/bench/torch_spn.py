#!/usr/bin/env python3
"""PyTorch reference for `spn bench`: one training epoch of an SPN.

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

Usage: torch_spn.py FILE.jsonl [--name NAME] [--k 5] [--layers 5]
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
    return to(x), [(to(s), to(d)) for s, d in hops], to(torch.cat(batch)), to(torch.tensor(ys))


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

    graphs = load(a.jsonl)
    labels = max(max(x) if x else 0 for _, _, x, _ in graphs) + 1
    classes = max(y for *_, y in graphs) + 1
    items = [(n, torch.tensor(x, dtype=torch.long), y, hop_sets(n, e, a.k, device)) for n, e, x, y in graphs]
    for hidden, batch in shapes:
        for mode in modes:
            run(a, device, items, labels, classes, hidden, batch, mode == "precollate")


def run(a, device, items, labels, classes, hidden, batch, precollate):
    """Trains a fresh model of width hidden (seeded by --seed) on items in
    batches of batch, a.warmup epochs untimed then a.epochs timed, and
    prints its lines."""
    torch.manual_seed(a.seed)
    model = SPN(labels, hidden, classes, a.layers, a.k, a.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    model.train()

    def step(x, hops, batch, y, num_graphs):
        opt.zero_grad()
        loss = F.cross_entropy(model(x, hops, batch, num_graphs), y)
        loss.backward()
        opt.step()

    def batches():
        """Yields each batch of one epoch in a fresh random order."""
        order = torch.randperm(len(items)).tolist()
        for lo in range(0, len(order), batch):
            chunk = [items[i] for i in order[lo:lo + batch]]
            yield collate(chunk, labels, a.k, device) + (len(chunk),)

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
    print(json.dumps({"workload": name, "graphs": len(items), "epochs": a.epochs, "hidden": hidden, "batch": batch,
                      "train_seconds": secs, "graphs_per_second": rate,
                      "graphs_per_cpu_second": len(items) * a.epochs / cpu, "peak_rss_mb": peak_mb, "torch": torch.__version__,
                      "threads": a.threads, "device": str(device), "precollate": precollate,
                      "warmup": a.warmup, "gpu_peak_mb": gpu_mb}), flush=True)

if __name__ == "__main__":
    main()
