#!/usr/bin/env python3
"""Writes graphs.jsonl: 300 small graphs in spn's JSON Lines format
(docs/data.md), the example of README.md's "Your own graphs".

Each graph is a random tree of 8 to 14 nodes; half of them (y = 1) get one
extra edge, which closes a cycle. Node labels x are 0, 1 or 2 at random.
The task, telling the graphs with a cycle from the trees, needs the
structure: the labels carry nothing. Deterministic (random.Random(52)):
running it again gives the same bytes.

    python3 examples/own-graphs/make_graphs.py examples/own-graphs/graphs.jsonl
"""
import json
import random
import sys


def graph(rng, cyclic):
    n = rng.randint(8, 14)
    edges = set()
    for v in range(1, n):
        edges.add((rng.randrange(v), v))
    if cyclic:
        while True:
            u, v = sorted(rng.sample(range(n), 2))
            if (u, v) not in edges:
                edges.add((u, v))
                break
    return {"nodes": n, "edges": sorted([u, v] for u, v in edges),
            "x": [rng.randrange(3) for _ in range(n)], "y": int(cyclic)}


def main(out):
    rng = random.Random(52)
    with open(out, "w") as f:
        for i in range(300):
            f.write(json.dumps(graph(rng, i % 2 == 1), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
