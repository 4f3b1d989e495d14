#!/usr/bin/env python3
"""Convert LRGB's Peptides-func upstream files into spn JSON Lines.

Usage: lrgb_peptides.py DIR OUT

DIR holds the two upstream files of the Long Range Graph Benchmark's
Peptides-func (Dwivedi et al., NeurIPS 2022 Datasets and Benchmarks), as
`spn data fetch peptides-func` stores them:

  peptide_multi_class_dataset.csv.gz       15,535 peptides: SMILES and 10 labels
  splits_random_stratified_peptide.pickle  the official train/val/test indices

Both are checked against the MD5s LRGB's loader pins. Each SMILES becomes a
molecular graph with OGB's featurisation (ogb.utils.smiles2graph: 9
categorical atom features and 3 categorical bond features, OGB's
vocabularies, OGB's "misc" fallback), as LRGB's loader builds it, and is
written as one line of spn's JSON Lines format (docs/data.md):

  {"nodes":N,"edges":[[i,j],...],"node_feat":[[9 ints],...],
   "edge_feat":[[3 ints],...],"target":[10 x 0/1],"split":"train"}

Each bond is one undirected edge [begin atom, end atom], with its features
in the order of "edges" (OGB stores both directions; spn's format lists an
undirected edge once). "split" is "train", "valid" or "test" from the
official split. Lines follow the CSV's row order. OUT ending in .gz is
gzip-compressed with a zero time stamp and no file name, so the same input
gives the same bytes. OUT is written through a temporary file: an error
leaves no partial OUT.

Needs Python 3 with RDKit and NumPy (Debian: python3-rdkit python3-numpy;
NumPy to unpickle the split's index arrays). Exit status 0 on success, 1 on
a data error (message names the file, and the line for a bad row), 2 on a
usage error.
"""

import ast
import csv
import gzip
import hashlib
import io
import json
import os
import pickle
import sys

CSV_NAME = "peptide_multi_class_dataset.csv.gz"
SPLIT_NAME = "splits_random_stratified_peptide.pickle"
# The MD5s LRGB's loader (peptides_functional.py) pins for the two files.
CSV_MD5 = "701eb743e899f4d793f0e13c8fa5a1b4"
SPLIT_MD5 = "5a0114bdadc80b94fc7ae974f13ef061"
NUM_TASKS = 10
# The pickle's keys and the split names spn's JSONL uses.
SPLITS = (("train", "train"), ("val", "valid"), ("test", "test"))

# OGB's vocabularies (ogb/utils/features.py, allowable_features). A value
# outside a list with a trailing "misc" maps to its last index; the lists
# without "misc" (bond stereo, aromatic, in ring, conjugated) have no
# fallback in OGB and an unknown value is an error here too.
ATOMIC_NUM = list(range(1, 119)) + ["misc"]
CHIRALITY = ["CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER", "misc"]
DEGREE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "misc"]
FORMAL_CHARGE = [-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, "misc"]
NUM_H = [0, 1, 2, 3, 4, 5, 6, 7, 8, "misc"]
NUM_RADICAL_E = [0, 1, 2, 3, 4, "misc"]
HYBRIDIZATION = ["SP", "SP2", "SP3", "SP3D", "SP3D2", "misc"]
IS_AROMATIC = [False, True]
IS_IN_RING = [False, True]
BOND_TYPE = ["SINGLE", "DOUBLE", "TRIPLE", "AROMATIC", "misc"]
BOND_STEREO = ["STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY"]
IS_CONJUGATED = [False, True]


class DataError(Exception):
    """An error in the input files (exit status 1)."""


def safe_index(values, v):
    """OGB's safe_index: the index of v, else the last index ("misc")."""
    try:
        return values.index(v)
    except ValueError:
        return len(values) - 1


def strict_index(values, v, what):
    """The index of v in a list without a "misc" entry."""
    try:
        return values.index(v)
    except ValueError:
        raise DataError("%s %r is not in OGB's vocabulary %r" % (what, v, values)) from None


def atom_features(atom):
    """OGB's atom_to_feature_vector."""
    return [
        safe_index(ATOMIC_NUM, atom.GetAtomicNum()),
        safe_index(CHIRALITY, str(atom.GetChiralTag())),
        safe_index(DEGREE, atom.GetTotalDegree()),
        safe_index(FORMAL_CHARGE, atom.GetFormalCharge()),
        safe_index(NUM_H, atom.GetTotalNumHs()),
        safe_index(NUM_RADICAL_E, atom.GetNumRadicalElectrons()),
        safe_index(HYBRIDIZATION, str(atom.GetHybridization())),
        strict_index(IS_AROMATIC, atom.GetIsAromatic(), "aromaticity"),
        strict_index(IS_IN_RING, atom.IsInRing(), "ring membership"),
    ]


def bond_features(bond):
    """OGB's bond_to_feature_vector."""
    return [
        safe_index(BOND_TYPE, str(bond.GetBondType())),
        strict_index(BOND_STEREO, str(bond.GetStereo()), "bond stereo"),
        strict_index(IS_CONJUGATED, bond.GetIsConjugated(), "conjugation"),
    ]


def smiles_graph(chem, smiles):
    """OGB's smiles2graph (removeHs=True) as an spn JSONL record without
    labels; None when RDKit cannot parse the SMILES."""
    mol = chem.MolFromSmiles(smiles)
    if mol is None:
        return None
    node_feat = [atom_features(a) for a in mol.GetAtoms()]
    edges, edge_feat = [], []
    for b in mol.GetBonds():
        edges.append([b.GetBeginAtomIdx(), b.GetEndAtomIdx()])
        edge_feat.append(bond_features(b))
    return {"nodes": len(node_feat), "edges": edges, "node_feat": node_feat, "edge_feat": edge_feat}


def md5_of(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_md5(path, want):
    try:
        got = md5_of(path)
    except OSError as e:
        raise DataError("%s: %s" % (path, e.strerror or e)) from None
    if got != want:
        raise DataError("%s: MD5 %s, but LRGB's loader pins %s: not the upstream file (fetch it again with `spn data fetch --refresh peptides-func`)" % (path, got, want))


def read_split(path, n):
    """The official split as a list of n names ("train", "valid", "test")."""
    try:
        with open(path, "rb") as f:
            raw = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, ImportError, AttributeError) as e:
        raise DataError("%s: cannot read the split: %s" % (path, e)) from None
    if not isinstance(raw, dict):
        raise DataError("%s: want a dict of index arrays, got %s" % (path, type(raw).__name__))
    names = [None] * n
    for key, name in SPLITS:
        if key not in raw:
            raise DataError("%s: no %r indices (keys: %s)" % (path, key, ", ".join(map(str, raw))))
        for i in (int(v) for v in raw[key]):
            if not 0 <= i < n:
                raise DataError("%s: %s index %d out of range 0..%d" % (path, key, i, n - 1))
            if names[i] is not None:
                raise DataError("%s: graph %d is in %s and %s" % (path, i, names[i], name))
            names[i] = name
    missing = [i for i, s in enumerate(names) if s is None]
    if missing:
        raise DataError("%s: %d graphs in no split (first: %d)" % (path, len(missing), missing[0]))
    return names


def read_rows(path):
    """The CSV's (line number, SMILES, labels) rows."""
    rows = []
    try:
        with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
            r = csv.reader(f)
            header = next(r, None)
            if header is None or "smiles" not in header or "labels" not in header:
                raise DataError("%s:1: want a header with columns smiles and labels, got %r" % (path, header))
            si, li = header.index("smiles"), header.index("labels")
            for rec in r:
                line = r.line_num
                if len(rec) != len(header):
                    raise DataError("%s:%d: %d columns, the header has %d" % (path, line, len(rec), len(header)))
                try:
                    labels = ast.literal_eval(rec[li])
                except (ValueError, SyntaxError):
                    raise DataError("%s:%d: labels %r: not a list" % (path, line, rec[li])) from None
                if not isinstance(labels, list) or len(labels) != NUM_TASKS or any(v not in (0, 1) or isinstance(v, bool) for v in labels):
                    raise DataError("%s:%d: labels %r: want %d values 0 or 1" % (path, line, rec[li], NUM_TASKS))
                rows.append((line, rec[si], [int(v) for v in labels]))
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
        raise DataError("%s: %s" % (path, e)) from None
    return rows


def records(chem, csv_path, rows, split):
    """The JSONL records of read_rows' rows with their split names; an
    error names the CSV's line."""
    for (line, smiles, labels), part in zip(rows, split):
        try:
            rec = smiles_graph(chem, smiles)
        except DataError as e:
            raise DataError("%s:%d: %s" % (csv_path, line, e)) from None
        if rec is None:
            raise DataError("%s:%d: RDKit cannot parse the SMILES %r" % (csv_path, line, smiles))
        rec["target"] = labels
        rec["split"] = part
        yield rec


def convert(directory, out):
    """Convert DIR's two files into OUT; returns the number of graphs."""
    try:
        from rdkit import Chem, RDLogger
    except ImportError:
        raise DataError("RDKit is not installed (Debian: apt-get install python3-rdkit python3-numpy)") from None
    RDLogger.DisableLog("rdApp.*")
    csv_path = os.path.join(directory, CSV_NAME)
    split_path = os.path.join(directory, SPLIT_NAME)
    check_md5(csv_path, CSV_MD5)
    check_md5(split_path, SPLIT_MD5)
    rows = read_rows(csv_path)
    split = read_split(split_path, len(rows))
    tmp = out + ".tmp"
    try:
        with open(tmp, "wb") as raw:
            if out.endswith(".gz"):
                stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
            else:
                stream = raw
            w = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
            for rec in records(Chem, csv_path, rows, split):
                w.write(json.dumps(rec, separators=(",", ":")))
                w.write("\n")
            w.flush()
            w.detach()
            if stream is not raw:
                stream.close()
        os.replace(tmp, out)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    return len(rows)


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: lrgb_peptides.py DIR OUT.jsonl[.gz]\n")
        return 2
    directory, out = argv[1], argv[2]
    if not (out.endswith(".jsonl") or out.endswith(".jsonl.gz")):
        sys.stderr.write("lrgb_peptides.py: OUT %r: want a .jsonl or .jsonl.gz file\n" % out)
        return 2
    try:
        n = convert(directory, out)
    except DataError as e:
        sys.stderr.write("lrgb_peptides.py: %s\n" % e)
        return 1
    except OSError as e:
        sys.stderr.write("lrgb_peptides.py: %s\n" % e)
        return 1
    print("wrote %d graphs to %s" % (n, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
