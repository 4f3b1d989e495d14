#!/usr/bin/env python3
"""PyTorch's loss and gradients for batches of graphs at an spn model
checkpoint, for every kind (baseline, spn, gin, rspn, espn, gcn, gat,
graphormer, drew): an implementation of their equations (docs/models.md) independent of spn's.

spn's test models/kinds (TestSameGradientsAsPyTorch) writes the three
inputs, runs this script and compares each batch's loss and gradients
with its own. spn and gin are torch_spn.py's SPN, the model the speed
comparison times (GIN is the SPN with k = 1: the nodes at distance 1 are
the neighbours); rspn and espn are written here:

  rspn  h_u <- (1+eps) MLP_s(h_u) + a_1 sum_j sum_{v: r_j(u,v)} MLP_j(h_v)
                + sum_{i>=2} a_i sum_{v in N_i(u)} MLP_h(h_v)
  espn  h_u <- MLP((1+eps) h_u + a_1 sum_{v in N(u)} ReLU(h_v + e_uv)
                + sum_{i>=2} a_i sum_{v in N_i(u)} h_v)

  drew  x_{t+1} <- x_t + ReLU(sum_{k<=min(t+1,K)} a_{t,k} MLP_{k,t}(x_s + sum_{v in N_k(u)} x_s[v])),
        s = t - max(k - nu, 0)   (class DRew)
  gcn   h <- MLP(D^-1/2 (A+I) D^-1/2 h)   (linear: D^-1/2 (A+I) D^-1/2 h Theta + b)
  gat   h_u <- MLP(concat over heads of sum_{v in N(u)+u} a_uv z_v)   (linear: no MLP)
        z = h W + b, a_uv = softmax_v LeakyReLU_0.2(<a_dst, z_u> + <a_src, z_v>)
  graphormer  pre-LN transformer blocks over each graph's node pairs with a
        spatial bias per distance bucket and head (class Graphormer)
  baseline  Errica et al.'s structure-agnostic baseline (class Baseline)

with a = softmax of k logits, MLP = Linear, BatchNorm, ReLU, Linear,
BatchNorm, ReLU (batch statistics over the batch's nodes), D the
degrees counting the self loop, the input of spn, gin, gcn and gat a
linear map of the one-hot node label, rspn's a linear map of the node
attributes, espn's h0 the sum of one embedding
per atom feature plus a bias and e_uv the sum of one embedding per bond
feature (a table per layer), and the readout sum_t Linear_t(pool(h^t))
over the input and every layer, pool the sum, mean or max over a
graph's nodes (model.pool). model.global_readout adds
(sum_{v in G} h_v) W_l, from the layer's input h, to the aggregate
(inside the MLP's input for spn, gin and espn, to rspn's sum);
model.unreachable (spn, rspn, espn) makes N_inf(u), the nodes of u's graph
that u cannot reach, a (k+1)-th hop set after N_k, with a (k+1)-th logit
(rspn's messages over it through MLP_h, as over N_2..N_k);
model.layer_norm (spn, gin, espn) puts a layer norm of its own on the
pooled state of every layer t >= 1 before Linear_t (not on the input's);
model.gated_readout (rspn) is GNN-FiLM's gated sum instead,
sum_v sigmoid(W_g [h0_v, hT_v] + b_g) * (W_t hT_v + b_t). The loss is the mean cross-entropy
(classification), the mean squared error over every target (regression)
or the mean binary cross-entropy with logits over the labelled entries
(multi-task binary; a missing label is null).

    torch_grads.py GRAPHS.json CHECKPOINT.json BATCHES.json [--masks MASKS.json] [--threads 1]

GRAPHS.json: a list of graphs, {"n": N, "adj": [[u, v], ...] (every
directed entry: v is a neighbour of u), "edge_type": [...] or
"edge_feat": [[...], ...] (parallel to adj), "x": [...] (node labels) or
"attrs": [[...], ...] or "node_cat": [[...], ...], and "y": class or
"target": [...]}.
CHECKPOINT.json: an spn checkpoint (pool sum, mean or max; dropout 0, or
given --masks; learnable
eps and not linear for the SPN kinds, which alone may have
global_readout; gated_readout for rspn only): its config gives the
kind, k, the layers, the task and the vocabularies, its parameters the
model's (spn stores a linear map's weight as in x out, PyTorch as
out x in; rspn's 2 + R MLPs are stacked, block b being MLP b's: MLP_s,
MLP_h, MLP_1..MLP_R).
BATCHES.json: a list of batches, each a list of graph indices (from 0).
MASKS.json (a checkpoint with dropout > 0): per batch, the dropout masks
spn drew for its readout terms (per term g x out values, 0 or 1/(1-p),
row-major), applied in training mode as spn applies them.

Output: one JSON line per batch, {"batch": i, "loss": x, "grads": {NAME:
[...]}, "loss_err32": e, "grad_err32": {NAME: e}, "kink": q}: the batch's
loss in training mode and the gradient of every parameter, by the
checkpoint's names and in its layout, computed in float64; how far the
same computed in float32 is from them (the Euclidean norm of the
difference), which measures how much float32 rounding the batch's
figures suffer; and the smallest |input| of a ReLU or LeakyReLU relative
to the root mean square of that input (Kinks): near 0, float32 rounding
may put an input on the other side of the kink, and the gradients of
two right implementations then differ by that node's whole term (null
for a model without either). The parameters do not change between
batches; the batch norms' running statistics do, as in training. Then
one JSON line per batch in evaluation mode (the running statistics of
all those passes), {"eval_batch": i, "out": [...], "out_err32": e}: the
outputs, graph by graph, in float64, and the largest distance of the
float32 ones from them.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_spn  # noqa: E402 (the benchmark's SPN and its hop sets)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Kinks:
    """The smallest distance of a ReLU's or LeakyReLU's input from 0, where
    its derivative jumps, relative to the root mean square of that input,
    over one forward pass: a float32 input that close to 0 may fall on
    either side, and a gradient through it may then differ by a whole
    term."""

    def __init__(self):
        self.min = float("inf")

    def see(self, x):
        x = x.detach()
        if x.numel():
            rms = x.pow(2).mean().sqrt()
            if rms > 0:
                self.min = min(self.min, (x.abs().min() / rms).item())


class Model(nn.Module):
    """The base of the models here: kinks records the inputs of their
    ReLUs (every nn.ReLU, once watch() is called) and of the ReLUs and
    LeakyReLUs they apply as functions (which call kinks.see)."""

    def __init__(self):
        super().__init__()
        self.kinks = Kinks()

    def watch(self):
        for mod in self.modules():
            if isinstance(mod, nn.ReLU):
                mod.register_forward_pre_hook(lambda _m, inp: self.kinks.see(inp[0]))


def mlp(d):
    return nn.Sequential(nn.Linear(d, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, d), nn.BatchNorm1d(d), nn.ReLU())


def mlp_pairs(prefix, mlps):
    """The checkpoint names of MLPs stacked block by block (one MLP: one
    block): (name, [(tensor, transposed)] per block)."""
    for i, (lin, bn) in enumerate([(0, 1), (3, 4)], 1):
        yield f"{prefix}.lin{i}.w", [(m[lin].weight, True) for m in mlps]
        yield f"{prefix}.lin{i}.b", [(m[lin].bias, False) for m in mlps]
        yield f"{prefix}.bn{i}.gamma", [(m[bn].weight, False) for m in mlps]
        yield f"{prefix}.bn{i}.beta", [(m[bn].bias, False) for m in mlps]


def readout_pairs(readout, norms=None):
    for t, lin in enumerate(readout):
        yield f"readout{t}.w", [(lin.weight, True)]
        yield f"readout{t}.b", [(lin.bias, False)]
    for t, ln in enumerate(norms or [], 1):
        yield f"readout{t}.ln.gamma", [(ln.weight, False)]
        yield f"readout{t}.ln.beta", [(ln.bias, False)]


def readout_norms(cfg, d):
    """model.layer_norm's layer norm per layer (t = 1..T: not the input
    embedding's readout), or None."""
    m = cfg["model"]
    if not m.get("layer_norm"):
        return None
    return nn.ModuleList(nn.LayerNorm(d) for _ in range(m["layers"]))


def global_read(h, b, w):
    """The global readout (sum_{v in G} h_v) W of each node's graph G."""
    return (pool(h, b, "sum") @ w)[b["batch"]]


def global_params(cfg, d):
    """model.global_readout's d x d map per layer (spn's layout: in x out),
    or None."""
    m = cfg["model"]
    if not m.get("global_readout"):
        return None
    return nn.ParameterList(nn.Parameter(torch.zeros(d, d)) for _ in range(m["layers"]))


def global_pairs(glob):
    for l, w in enumerate(glob or [], 1):
        yield f"layer{l}.global_readout.w", [(w, False)]


def hop_sum(h, hop):
    """sum_{v in N_i(u)} h_v for every u; hop is (src v, dst u)."""
    src, dst = hop
    return torch.zeros_like(h).index_add_(0, dst, h[src])


def dense(d):
    """DRew-GCN's map after the propagation: GCNConv's linear map, then
    GraphGym's batch norm and ReLU."""
    return nn.Sequential(nn.Linear(d, d), nn.BatchNorm1d(d), nn.ReLU())


def dense_pairs(prefix, m):
    yield f"{prefix}.lin.w", [(m[0].weight, True)]
    yield f"{prefix}.lin.b", [(m[0].bias, False)]
    yield f"{prefix}.bn.gamma", [(m[1].weight, False)]
    yield f"{prefix}.bn.beta", [(m[1].bias, False)]


def gcn_hop(h, hop):
    """D^-1/2 (A_k + I) D^-1/2 h over hop set N_k, hop (src v, dst u), D
    the hop-k degrees plus one (A_k symmetric)."""
    src, dst = hop
    deg = torch.ones(h.shape[0], dtype=h.dtype).index_add_(0, dst, torch.ones(dst.shape[0], dtype=h.dtype))
    w = (deg[src] * deg[dst]).rsqrt()
    return h / deg[:, None] + torch.zeros_like(h).index_add_(0, dst, w[:, None] * h[src])


def pool(h, b, how):
    """Each graph's sum, mean or max of h over its nodes."""
    s = torch.zeros(b["graphs"], h.shape[1], dtype=h.dtype).index_add_(0, b["batch"], h)
    if how == "sum":
        return s
    if how == "mean":
        n = torch.zeros(b["graphs"], dtype=h.dtype).index_add_(0, b["batch"], torch.ones_like(h[:, 0]))
        return s / n.clamp(min=1)[:, None]
    if how == "max":
        return torch.stack([h[b["batch"] == g].max(0).values for g in range(b["graphs"])])
    sys.exit(f"pool {how!r}: want sum, mean or max")


def readout(model, hs, b):
    """sum_t Dropout(Linear_t(LN_t(pool(h^t)))), the dropout masks spn's
    (b["masks"], inverted: 0 or 1/(1-p)) in training mode and none in
    evaluation, LN_t model.readout_ln[t-1] for t >= 1 with model.layer_norm
    and the identity otherwise."""
    masks = b.get("masks") if model.training else None
    norms = [nn.Identity()] + list(getattr(model, "readout_ln", None) or [nn.Identity()] * (len(hs) - 1))
    terms = [lin(ln(pool(h, b, b["pool"]))) for h, lin, ln in zip(hs, model.readout, norms)]
    if masks is not None:
        terms = [x * m.to(x.dtype) for x, m in zip(terms, masks)]
    return sum(terms)


class SPN(Model):
    """torch_spn.SPN, fed a collated batch."""

    def __init__(self, cfg, d, out):
        super().__init__()
        self.labels = cfg["num_labels"]
        m = cfg["model"]
        self.net = torch_spn.SPN(self.labels, d, out, m["layers"], terms(m), 0.0)
        self.net.readout_ln = readout_norms(cfg, d)
        self.glob = global_params(cfg, d)

    def pairs(self):
        n = self.net
        yield "enc.emb", [(n.enc.weight, True)]
        yield "enc.b", [(n.enc.bias, False)]
        for l, layer in enumerate(n.layers, 1):
            yield f"layer{l}.agg.alpha_logits", [(layer.alpha, False)]
            yield f"layer{l}.agg.eps", [(layer.eps, False)]
            yield from mlp_pairs(f"layer{l}", [layer.mlp])
        yield from readout_pairs(n.readout, n.readout_ln)
        yield from global_pairs(self.glob)

    def forward(self, b):
        x = F.one_hot(b["x"], self.labels).to(self.net.enc.weight.dtype)
        if self.glob is None and self.net.readout_ln is None and b["pool"] == "sum" and not (self.training and b.get("masks") is not None):
            return self.net(x, b["hops"], b["batch"], b["graphs"])
        # torch_spn's layer, with the global readout added to its
        # aggregate, and the readout pooling and dropping as the model
        # does.
        h = self.net.enc(x)
        hs = [h]
        for l, layer in enumerate(self.net.layers):
            a = torch.softmax(layer.alpha, 0)
            agg = (1 + layer.eps) * h
            if self.glob is not None:
                agg = agg + global_read(h, b, self.glob[l])
            for i, hop in enumerate(b["hops"]):
                agg = agg + a[i] * hop_sum(h, hop)
            h = layer.mlp(agg)
            hs.append(h)
        return readout(self.net, hs, b)


class RSPN(Model):
    def __init__(self, cfg, d, out):
        super().__init__()
        m = cfg["model"]
        self.k, self.rels = terms(m), cfg["num_edge_types"]
        self.enc = nn.Linear(cfg["attr_dim"], d)
        self.alpha = nn.ParameterList(nn.Parameter(torch.zeros(self.k)) for _ in range(m["layers"]))
        self.eps = nn.ParameterList(nn.Parameter(torch.zeros(1)) for _ in range(m["layers"]))
        self.mlps = nn.ModuleList(nn.ModuleList(mlp(d) for _ in range(2 + self.rels)) for _ in range(m["layers"]))
        self.glob = global_params(cfg, d)
        self.gated = bool(m.get("gated_readout"))
        if self.gated:
            self.gate, self.transform = nn.Linear(2 * d, out), nn.Linear(d, out)
        else:
            self.readout = nn.ModuleList(nn.Linear(d, out) for _ in range(m["layers"] + 1))

    def pairs(self):
        yield "enc.attr_w", [(self.enc.weight, True)]
        yield "enc.b", [(self.enc.bias, False)]
        for l in range(len(self.mlps)):
            yield f"layer{l + 1}.agg.alpha_logits", [(self.alpha[l], False)]
            yield f"layer{l + 1}.agg.eps", [(self.eps[l], False)]
            yield from mlp_pairs(f"layer{l + 1}.mlps", self.mlps[l])
        yield from global_pairs(self.glob)
        if self.gated:
            for name, lin in (("gate", self.gate), ("transform", self.transform)):
                yield f"readout.{name}.w", [(lin.weight, True)]
                yield f"readout.{name}.b", [(lin.bias, False)]
        else:
            yield from readout_pairs(self.readout)

    def forward(self, b):
        h = self.enc(b["attrs"])
        hs = [h]
        u, v, r = b["adj_u"], b["adj_v"], b["edge_type"]
        for alpha, eps, mlps in zip(self.alpha, self.eps, self.mlps):
            a = torch.softmax(alpha, 0)
            s, hh, rel = mlps[0](h), mlps[1](h), [m(h) for m in mlps[2:]]
            first = torch.zeros_like(h)
            for j in range(self.rels):
                on = r == j
                first.index_add_(0, u[on], rel[j][v[on]])
            new = (1 + eps) * s + a[0] * first
            for i in range(1, self.k):
                new = new + a[i] * hop_sum(hh, b["hops"][i])
            if self.glob is not None:
                new = new + global_read(h, b, self.glob[len(hs) - 1])
            h = new
            hs.append(h)
        if self.gated:
            # GNN-FiLM's gated sum over the last layer's nodes, the gate
            # reading [h0_v, hT_v].
            g = torch.sigmoid(self.gate(torch.cat([hs[0], h], 1))) * self.transform(h)
            return pool(g, b, "sum")
        return readout(self, hs, b)


class ESPN(Model):
    def __init__(self, cfg, d, out):
        super().__init__()
        m = cfg["model"]
        self.k = terms(m)
        nv, ev = cfg["node_cat_vocab"], cfg["edge_feat_vocab"]
        self.node_off = torch.tensor([sum(nv[:c]) for c in range(len(nv))])
        self.edge_off = torch.tensor([sum(ev[:c]) for c in range(len(ev))])
        self.atom = nn.Parameter(torch.zeros(sum(nv), d))
        self.enc_b = nn.Parameter(torch.zeros(d))
        self.alpha = nn.ParameterList(nn.Parameter(torch.zeros(self.k)) for _ in range(m["layers"]))
        self.eps = nn.ParameterList(nn.Parameter(torch.zeros(1)) for _ in range(m["layers"]))
        self.bond = nn.ParameterList(nn.Parameter(torch.zeros(sum(ev), d)) for _ in range(m["layers"]))
        self.mlps = nn.ModuleList(mlp(d) for _ in range(m["layers"]))
        self.readout = nn.ModuleList(nn.Linear(d, out) for _ in range(m["layers"] + 1))
        self.readout_ln = readout_norms(cfg, d)
        self.glob = global_params(cfg, d)

    def pairs(self):
        yield from global_pairs(self.glob)
        yield "enc.atom", [(self.atom, False)]
        yield "enc.b", [(self.enc_b, False)]
        for l in range(len(self.mlps)):
            yield f"layer{l + 1}.agg.alpha_logits", [(self.alpha[l], False)]
            yield f"layer{l + 1}.agg.eps", [(self.eps[l], False)]
            yield f"layer{l + 1}.bond", [(self.bond[l], False)]
            yield from mlp_pairs(f"layer{l + 1}", [self.mlps[l]])
        yield from readout_pairs(self.readout, self.readout_ln)

    def forward(self, b):
        h = self.atom[b["node_cat"] + self.node_off].sum(1) + self.enc_b
        hs = [h]
        u, v = b["adj_u"], b["adj_v"]
        for alpha, eps, bond, m in zip(self.alpha, self.eps, self.bond, self.mlps):
            a = torch.softmax(alpha, 0)
            e = bond[b["edge_feat"] + self.edge_off].sum(1)
            msg = h[v] + e
            self.kinks.see(msg)
            agg = (1 + eps) * h + a[0] * torch.zeros_like(h).index_add_(0, u, F.relu(msg))
            for i in range(1, self.k):
                agg = agg + a[i] * hop_sum(h, b["hops"][i])
            if self.glob is not None:
                agg = agg + global_read(h, b, self.glob[len(hs) - 1])
            h = m(agg)
            hs.append(h)
        return readout(self, hs, b)


class Direct(Model):
    """GCN and GAT: the SPN's input encoder and readout around a layer
    over N(u) and u, followed by the SPN's MLP or, with model.linear,
    by nothing."""

    def __init__(self, cfg, d, out):
        super().__init__()
        m = cfg["model"]
        self.labels, self.linear = cfg["num_labels"], bool(m.get("linear"))
        self.enc = nn.Linear(self.labels, d)
        self.mlps = nn.ModuleList(mlp(d) for _ in range(m["layers"])) if not self.linear else None
        self.readout = nn.ModuleList(nn.Linear(d, out) for _ in range(m["layers"] + 1))

    def pairs(self):
        yield "enc.emb", [(self.enc.weight, True)]
        yield "enc.b", [(self.enc.bias, False)]
        for l in range(len(self.readout) - 1):
            yield from self.layer_pairs(l)
            if self.mlps is not None:
                yield from mlp_pairs(f"layer{l + 1}", [self.mlps[l]])
        yield from readout_pairs(self.readout)

    def forward(self, b):
        h = self.enc(F.one_hot(b["x"], self.labels).to(self.enc.weight.dtype))
        hs = [h]
        for l in range(len(self.readout) - 1):
            h = self.propagate(l, h, b)
            if self.mlps is not None:
                h = self.mlps[l](h)
            hs.append(h)
        return readout(self, hs, b)


class GCN(Direct):
    """h <- MLP(D^-1/2 (A+I) D^-1/2 h), or with model.linear
    D^-1/2 (A+I) D^-1/2 h Theta + b; D the degrees with the self loop."""

    def __init__(self, cfg, d, out):
        super().__init__(cfg, d, out)
        self.lins = nn.ModuleList(nn.Linear(d, d) for _ in range(cfg["model"]["layers"])) if self.linear else None

    def layer_pairs(self, l):
        if self.lins is not None:
            yield f"layer{l + 1}.lin.w", [(self.lins[l].weight, True)]
            yield f"layer{l + 1}.lin.b", [(self.lins[l].bias, False)]

    def propagate(self, l, h, b):
        u, v = b["adj_u"], b["adj_v"]
        deg = torch.ones(h.shape[0], dtype=h.dtype).index_add_(0, u, torch.ones(u.shape[0], dtype=h.dtype))
        w = (deg[u] * deg[v]).rsqrt()
        agg = h / deg[:, None] + torch.zeros_like(h).index_add_(0, u, w[:, None] * h[v])
        return self.lins[l](agg) if self.lins is not None else agg


class GAT(Direct):
    """z = h W + b; per head (d/heads columns)
    a_uv = softmax over v in N(u) and u of LeakyReLU_0.2(<a_dst, z_u> + <a_src, z_v>);
    h_u <- MLP(concat of the heads' sum_v a_uv z_v), or with model.linear
    the concatenation itself."""

    def __init__(self, cfg, d, out):
        super().__init__(cfg, d, out)
        layers, self.heads = cfg["model"]["layers"], cfg["model"]["heads"]
        self.att = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.a_src = nn.ParameterList(nn.Parameter(torch.zeros(self.heads, d // self.heads)) for _ in range(layers))
        self.a_dst = nn.ParameterList(nn.Parameter(torch.zeros(self.heads, d // self.heads)) for _ in range(layers))

    def layer_pairs(self, l):
        yield f"layer{l + 1}.att.w", [(self.att[l].weight, True)]
        yield f"layer{l + 1}.att.b", [(self.att[l].bias, False)]
        yield f"layer{l + 1}.att.a_src", [(self.a_src[l], False)]
        yield f"layer{l + 1}.att.a_dst", [(self.a_dst[l], False)]

    def propagate(self, l, h, b):
        n = h.shape[0]
        loops = torch.arange(n)
        u, v = torch.cat([b["adj_u"], loops]), torch.cat([b["adj_v"], loops])
        z = self.att[l](h).view(n, self.heads, -1)
        src, dst = (z * self.a_src[l]).sum(-1), (z * self.a_dst[l]).sum(-1)
        e = dst[u] + src[v]
        self.kinks.see(e)
        e = F.leaky_relu(e, 0.2)
        e = (e - e.max()).exp()
        den = torch.zeros(n, self.heads, dtype=h.dtype).index_add_(0, u, e)
        a = e / den[u]
        return torch.zeros_like(z).index_add_(0, u, a[:, :, None] * z[v]).reshape(n, -1)


class Graphormer(Model):
    """h0 = Enc(label) + E[min(degree, 32)]; per block
    a = LN1(h), h += Wo Attn(Wq a, Wk a, Wv a), h += W2 ReLU(W1 LN2(h)),
    the attention per head over the node pairs of each graph, with
    scores q_u.k_v / sqrt(d/heads) + bias[bucket(u, v), head]: the bucket
    is the shortest-path distance clamped to max_dist, max_dist + 1 for
    an unreachable pair."""

    max_degree = 32

    def __init__(self, cfg, d, out):
        super().__init__()
        m = cfg["model"]
        self.labels, self.heads, self.max_dist = cfg["num_labels"], m["heads"], m["max_dist"]
        self.enc = nn.Linear(self.labels, d)
        self.degree = nn.Parameter(torch.zeros(self.max_degree + 1, d))
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "ln1": nn.LayerNorm(d, eps=1e-5), "q": nn.Linear(d, d), "k": nn.Linear(d, d), "v": nn.Linear(d, d),
            "o": nn.Linear(d, d), "ln2": nn.LayerNorm(d, eps=1e-5), "ffn1": nn.Linear(d, d), "relu": nn.ReLU(),
            "ffn2": nn.Linear(d, d)}) for _ in range(m["layers"]))
        self.bias = nn.ParameterList(nn.Parameter(torch.zeros(self.max_dist + 2, self.heads)) for _ in range(m["layers"]))
        self.readout = nn.ModuleList(nn.Linear(d, out) for _ in range(m["layers"] + 1))

    def pairs(self):
        yield "enc.emb", [(self.enc.weight, True)]
        yield "enc.b", [(self.enc.bias, False)]
        yield "enc.degree", [(self.degree, False)]
        for l, blk in enumerate(self.blocks, 1):
            for ln in ("ln1", "ln2"):
                yield f"layer{l}.{ln}.gamma", [(blk[ln].weight, False)]
                yield f"layer{l}.{ln}.beta", [(blk[ln].bias, False)]
            for lin, ck in (("q", "attn.q"), ("k", "attn.k"), ("v", "attn.v"), ("o", "attn.o"), ("ffn1", "ffn1"), ("ffn2", "ffn2")):
                yield f"layer{l}.{ck}.w", [(blk[lin].weight, True)]
                yield f"layer{l}.{ck}.b", [(blk[lin].bias, False)]
            yield f"layer{l}.attn.spatial_bias", [(self.bias[l - 1], False)]
        yield from readout_pairs(self.readout)

    def forward(self, b):
        n = b["batch"].shape[0]
        deg = torch.zeros(n, dtype=torch.long).index_add_(0, b["adj_u"], torch.ones_like(b["adj_u"]))
        h = self.enc(F.one_hot(b["x"], self.labels).to(self.enc.weight.dtype)) + self.degree[deg.clamp(max=self.max_degree)]
        hs = [h]
        same = b["batch"][:, None] == b["batch"][None, :]
        bucket = b["dist"].clamp(max=self.max_dist)
        bucket[b["dist"] < 0] = self.max_dist + 1
        dh = h.shape[1] // self.heads
        for blk, bias in zip(self.blocks, self.bias):
            a = blk["ln1"](h)
            q, k, v = (blk[x](a).view(n, self.heads, dh).transpose(0, 1) for x in ("q", "k", "v"))
            s = q @ k.transpose(1, 2) / dh ** 0.5 + bias[bucket].permute(2, 0, 1)
            s = s.masked_fill(~same, float("-inf"))
            att = (torch.softmax(s, -1) @ v).transpose(0, 1).reshape(n, -1)
            h = h + blk["o"](att)
            h = h + blk["ffn2"](blk["relu"](blk["ffn1"](blk["ln2"](h))))
            hs.append(h)
        return readout(self, hs, b)


def terms(m):
    """The hop sets a layer of model section m sums over: N_1..N_k, and
    N_inf with model.unreachable (drew: the hop sets its layers read)."""
    if m["kind"] == "drew":
        return drew_max_hop(m)
    return m["k"] + (1 if m.get("unreachable") else 0)


def drew_max_hop(m):
    """The largest hop DRew's layers read: the layer count, capped by
    model.k when it is set (k >= 1)."""
    return min(m["k"], m["layers"]) if m.get("k", 0) >= 1 else m["layers"]


class DRew(Model):
    """DRew (Gutteridge et al., ICML 2023), from its equation in
    docs/models.md: layer t = 0..L-1 reads the hops k = 1..m_t,
    m_t = min(t+1, K), and

      x_{t+1} = x_t + ReLU(sum_k a_{t,k} MLP_{k,t}(x_s + sum_{v in N_k(u)} x_s[v])),
      s = t - max(k - nu, 0)  (nu = inf: s = t)

    with conv gine's first hop sum_{v in N(u)} ReLU(x_s[v] + e_uv) (e_uv
    a BondEncoder per layer, as espn's), with conv gcn the term
    ReLU(BN(Ahat_k x_s W + b)) instead of the MLP's, Ahat_k =
    D^-1/2 (A_k + I) D^-1/2 over N_k (PyG's GCNConv on the hop-k edges,
    D the hop-k degrees plus one), a_t = 1/m_t (weights equal) or
    softmax of the layer's logits (learned), the input the SPN's label
    map (or espn's AtomEncoder) and the readout the SPN's."""

    def __init__(self, cfg, d, out):
        super().__init__()
        m = cfg["model"]
        top = drew_max_hop(m)
        self.hops = [min(t + 1, top) for t in range(m["layers"])]
        delay = m.get("delay", "none")
        self.nu = float("inf") if delay == "none" else int(delay)
        self.gine, self.learned = m["conv"] == "gine", m["weights"] == "learned"
        self.gcn = m["conv"] == "gcn"
        self.labels = cfg["num_labels"]
        nv, ev = cfg.get("node_cat_vocab") or [], cfg.get("edge_feat_vocab") or []
        self.node_off = torch.tensor([sum(nv[:c]) for c in range(len(nv))])
        self.edge_off = torch.tensor([sum(ev[:c]) for c in range(len(ev))])
        self.enc = nn.Linear(self.labels, d) if self.labels else None
        self.enc_b = nn.Parameter(torch.zeros(d)) if not self.labels else None
        self.atom = nn.Parameter(torch.zeros(sum(nv), d)) if nv else None
        self.alpha = nn.ParameterList(nn.Parameter(torch.zeros(h)) for h in self.hops) if self.learned else None
        self.bond = nn.ParameterList(nn.Parameter(torch.zeros(sum(ev), d)) for _ in self.hops) if self.gine else None
        hop_map = dense if self.gcn else mlp
        self.mlps = nn.ModuleList(nn.ModuleList(hop_map(d) for _ in range(h)) for h in self.hops)
        self.readout = nn.ModuleList(nn.Linear(d, out) for _ in range(m["layers"] + 1))

    def pairs(self):
        if self.enc is not None:
            yield "enc.emb", [(self.enc.weight, True)]
            yield "enc.b", [(self.enc.bias, False)]
        else:
            yield "enc.b", [(self.enc_b, False)]
        if self.atom is not None:
            yield "enc.atom", [(self.atom, False)]
        for t, mlps in enumerate(self.mlps):
            if self.alpha is not None:
                yield f"layer{t + 1}.alpha_logits", [(self.alpha[t], False)]
            if self.bond is not None:
                yield f"layer{t + 1}.bond", [(self.bond[t], False)]
            for k, m in enumerate(mlps, 1):
                if self.gcn:
                    yield from dense_pairs(f"layer{t + 1}.hop{k}", m)
                else:
                    yield from mlp_pairs(f"layer{t + 1}.hop{k}", [m])
        yield from readout_pairs(self.readout)

    def forward(self, b):
        if self.enc is not None:
            h = self.enc(F.one_hot(b["x"], self.labels).to(self.enc.weight.dtype))
        else:
            h = self.enc_b.expand(b["batch"].shape[0], -1)
        if self.atom is not None:
            h = h + self.atom[b["node_cat"] + self.node_off].sum(1)
        xs = [h]
        u, v = b["adj_u"], b["adj_v"]
        for t, mlps in enumerate(self.mlps):
            m_t = len(mlps)
            a = torch.softmax(self.alpha[t], 0) if self.learned else torch.full((m_t,), 1.0 / m_t, dtype=h.dtype)
            out = torch.zeros_like(h)
            for k in range(1, m_t + 1):
                x = xs[t - max(k - self.nu, 0)] if self.nu != float("inf") else xs[t]
                if self.gcn:
                    out = out + a[k - 1] * mlps[k - 1](gcn_hop(x, b["hops"][k - 1]))
                    continue
                if self.gine and k == 1:
                    msg = x[v] + self.bond[t][b["edge_feat"] + self.edge_off].sum(1)
                    self.kinks.see(msg)
                    agg = torch.zeros_like(x).index_add_(0, u, F.relu(msg))
                else:
                    agg = hop_sum(x, b["hops"][k - 1])
                out = out + a[k - 1] * mlps[k - 1](x + agg)
            xs.append(xs[t] + F.relu(out))
        return readout(self, xs, b)


def unreachable_set(n, adj):
    """N_inf of one graph as (src v, dst u): v not reachable from u."""
    dst, src = (distances(n, adj) < 0).nonzero(as_tuple=True)
    return src, dst


def distances(n, adj):
    """All-pairs shortest-path distances of one graph by BFS, -1 for an
    unreachable pair."""
    nb = [[] for _ in range(n)]
    for u, v in adj:
        nb[u].append(v)
    dist = torch.full((n, n), -1, dtype=torch.long)
    for s in range(n):
        dist[s, s] = 0
        frontier, d = [s], 0
        while frontier:
            d += 1
            nxt = []
            for u in frontier:
                for v in nb[u]:
                    if dist[s, v] < 0:
                        dist[s, v] = d
                        nxt.append(v)
            frontier = nxt
    return dist


class Baseline(Model):
    """Errica et al.'s structure-agnostic baseline over x_v = onehot(label_v)
    + attrs_v (concatenated): with node attributes DeepMultisets,
    out = W3 ReLU(W2 sum_v ReLU(W1 x_v + b1) + b2) + b3; otherwise the
    fingerprint, out = ReLU(W2 ReLU(W1 sum_v x_v + b1) + b2)."""

    def __init__(self, cfg, d, out):
        super().__init__()
        self.labels, attrs = cfg["num_labels"], cfg["attr_dim"]
        f = self.labels + attrs
        self.deep = attrs > 0
        names = ("vertex", "global1", "global2") if self.deep else ("mlp1", "mlp2")
        sizes = (f, d, d, out) if self.deep else (f, d, out)
        self.lins = nn.ModuleDict({n: nn.Linear(a, b) for n, a, b in zip(names, sizes, sizes[1:])})
        self.relu = nn.ReLU()

    def pairs(self):
        for name, lin in self.lins.items():
            yield f"{name}.w", [(lin.weight, True)]
            yield f"{name}.b", [(lin.bias, False)]

    def forward(self, b):
        parts = []
        if self.labels > 0:
            parts.append(F.one_hot(b["x"], self.labels).to(self.lins[next(iter(self.lins))].weight.dtype))
        if self.deep:
            parts.append(b["attrs"].to(parts[0].dtype if parts else torch.float64))
        x = torch.cat(parts, 1)
        if self.deep:
            h = pool(self.relu(self.lins["vertex"](x)), b, "sum")
            return self.lins["global2"](self.relu(self.lins["global1"](h)))
        return self.relu(self.lins["mlp2"](self.relu(self.lins["mlp1"](pool(x, b, "sum")))))


KINDS = {"baseline": Baseline, "spn": SPN, "gin": SPN, "rspn": RSPN, "espn": ESPN, "gcn": GCN, "gat": GAT, "graphormer": Graphormer, "drew": DRew}


def collate(graphs, hops, idx, k, dists=None):
    """One batch of graphs[idx]: node offsets applied to the adjacency and
    the hop sets, node and edge inputs concatenated."""
    cat = {key: [] for key in ("adj_u", "adj_v", "edge_type", "edge_feat", "x", "attrs", "node_cat", "batch", "y", "target")}
    hs = [([], []) for _ in range(k)]
    off = 0
    for gi, j in enumerate(idx):
        g = graphs[j]
        cat["adj_u"] += [u + off for u, _ in g["adj"]]
        cat["adj_v"] += [v + off for _, v in g["adj"]]
        for key in ("edge_type", "edge_feat", "x", "attrs", "node_cat"):
            cat[key] += g.get(key, [])
        cat["batch"] += [gi] * g["n"]
        if "y" in g:
            cat["y"].append(g["y"])
        if "target" in g:
            cat["target"].append([float("nan") if t is None else t for t in g["target"]])
        for i, (s, d) in enumerate(hops[j]):
            hs[i][0].append(s + off)
            hs[i][1].append(d + off)
        off += g["n"]
    b = {key: torch.tensor(v, dtype=torch.float64 if key in ("attrs", "target") else torch.long) for key, v in cat.items()}
    b["hops"] = [(torch.cat(s), torch.cat(d)) for s, d in hs]
    b["graphs"] = len(idx)
    if dists is not None:
        b["dist"] = torch.block_diag(*[dists[j] + 1 for j in idx]) - 1
    return b


def loss_of(task, out, b):
    if task == "classification":
        return F.cross_entropy(out, b["y"])
    t = b["target"].to(out.dtype)
    if task == "regression":
        return F.mse_loss(out, t)
    if task == "binary":
        on = ~torch.isnan(t)
        return F.binary_cross_entropy_with_logits(out[on], t[on])
    sys.exit(f"task {task!r}: want classification, regression or binary")


def unsupported(m, masks):
    """Why this script cannot compute the model section m ("" if it can);
    masks is the --masks file, if any."""
    kind = m.get("kind")
    spnlike = kind in ("spn", "gin", "rspn", "espn")
    for bad, why in (
        (kind not in KINDS, f"kind {kind!r}: want one of {', '.join(KINDS)}"),
        (kind != "baseline" and m.get("pool") not in ("sum", "mean", "max"), "want pool sum, mean or max"),
        (m.get("dropout") and not masks, "dropout needs --masks"),
        (m.get("dropout") and (kind == "baseline" or m.get("gated_readout")), "dropout only on the layer readout"),
        (spnlike and not m.get("learn_eps"), "want learn_eps"),
        (spnlike and m.get("linear"), "linear is GCN's and GAT's"),
        (m.get("global_readout") and not spnlike, "global_readout is spn's, gin's, rspn's and espn's"),
        (m.get("gated_readout") and kind != "rspn", "gated_readout is rspn's"),
        (m.get("unreachable") and kind not in ("spn", "rspn", "espn"), "unreachable is spn's, rspn's and espn's"),
        (m.get("layer_norm") and kind not in ("spn", "gin", "espn"), "layer_norm is spn's, gin's and espn's"),
    ):
        if bad:
            return why
    return ""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("graphs")
    p.add_argument("checkpoint")
    p.add_argument("batches")
    p.add_argument("--masks", help="JSON: per batch, per readout term, the g x out dropout mask spn drew")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)

    with open(a.checkpoint) as f:
        ck = json.load(f)
    if ck.get("format") != "spn-model":
        sys.exit(f"{a.checkpoint}: not an spn model checkpoint")
    cfg = ck["config"]
    m = cfg["model"]
    if why := unsupported(m, a.masks):
        sys.exit(f"{a.checkpoint}: {why}; got {m}")
    params = {p["name"]: torch.tensor(p["values"], dtype=torch.float64).reshape(p["shape"]) for p in ck["params"]}
    k, d, out = (drew_max_hop(m) if m["kind"] == "drew" else m["k"]), m["hidden"], cfg["out"]

    with open(a.graphs) as f:
        graphs = json.load(f)
    cpu = torch.device("cpu")
    hops = [torch_spn.hop_sets(g["n"], g["adj"], k, cpu) for g in graphs]
    if m.get("unreachable"):
        for j, g in enumerate(graphs):
            hops[j].append(unreachable_set(g["n"], g["adj"]))
    dists = [distances(g["n"], g["adj"]) for g in graphs] if m["kind"] == "graphormer" else None
    with open(a.batches) as f:
        batches = json.load(f)
    masks = None
    if a.masks:
        with open(a.masks) as f:
            masks = json.load(f)
        if len(masks) != len(batches):
            sys.exit(f"{a.masks}: {len(masks)} batches of masks for {len(batches)} batches")

    # The model twice: in float64, the reference, and in float32, whose
    # distance from it says how much float32 rounding the batch's
    # figures suffer (a batch norm divides by a feature's spread).
    models = {}
    for dtype in (torch.float64, torch.float32):
        model = KINDS[m["kind"]](cfg, d, out).to(dtype)
        model.watch()
        mapped = list(model.pairs())
        if sorted(n for n, _ in mapped) != sorted(params) or sum(len(b) for _, b in mapped) != len(list(model.parameters())):
            sys.exit(f"{a.checkpoint}: parameters {sorted(params)} do not map onto the {m['kind']} model's")
        with torch.no_grad():
            for name, blocks in mapped:
                chunks = params[name].chunk(len(blocks), 0)
                for (t, tr), v in zip(blocks, chunks):
                    v = v.T if tr else v
                    if t.shape != v.shape:
                        sys.exit(f"{a.checkpoint}: {name}: shape {tuple(params[name].shape)} does not fit {len(blocks)} x {tuple(t.shape)}")
                    t.copy_(v)
        model.train()
        models[dtype] = (model, mapped)

    collated = []
    for i, idx in enumerate(batches):
        b = collate(graphs, hops, idx, terms(m), dists)
        b["pool"] = m["pool"]
        if masks is not None:
            b["masks"] = [torch.tensor(mk, dtype=torch.float64).reshape(len(idx), out) for mk in masks[i]]
        collated.append(b)

    for i, b in enumerate(collated):
        res = {}
        for dtype, (model, mapped) in models.items():
            bd = dict(b, attrs=b["attrs"].to(dtype))
            model.kinks.min = float("inf")
            model.zero_grad()
            loss = loss_of(cfg["task"], model(bd), bd)
            loss.backward()
            grads = {name: torch.cat([(t.grad.T if tr else t.grad).reshape(-1) for t, tr in blocks]).double()
                     for name, blocks in mapped}
            res[dtype] = loss.item(), grads, model.kinks.min
        (l64, g64, kink), (l32, g32, _) = res[torch.float64], res[torch.float32]
        print(json.dumps({"batch": i, "loss": l64, "loss_err32": abs(l32 - l64),
                          "kink": None if kink == float("inf") else kink,
                          "grads": {n: g.tolist() for n, g in g64.items()},
                          "grad_err32": {n: (g32[n] - g).norm().item() for n, g in g64.items()}}), flush=True)

    # Evaluation mode after those training-mode passes, each of which
    # updated the batch norms' running statistics (as spn's steps do).
    # (The readout ignores the masks in evaluation mode.)
    for model, _ in models.values():
        model.eval()
    for i, b in enumerate(collated):
        with torch.no_grad():
            o64, o32 = (models[dt][0](dict(b, attrs=b["attrs"].to(dt))).double() for dt in (torch.float64, torch.float32))
        print(json.dumps({"eval_batch": i, "out": o64.flatten().tolist(), "out_err32": (o32 - o64).abs().max().item()}), flush=True)


if __name__ == "__main__":
    main()
