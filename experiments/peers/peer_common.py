"""Shared input handling for the Python peers and flops.py: SST trees, vocabularies, weights.

Trees are held as flat arrays in post-order (children before parents), so no code here or in the
peers recurses on the Python stack per node.  A tree is a `Tree` with, per node n:
  token[n]     vocabulary id for a leaf, -1 for an internal node
  children[n]  list of child node indices (empty for a leaf), in input order
The root is the last node.

Weights are a dict name -> float32 numpy array with the names and shapes of docs/MODELS.md.
They are read from / written to safetensors files with plain struct + json (no extra packages).
"""

import json
import struct
from dataclasses import dataclass, field

import numpy as np

MODELS = ("treefc", "treegru", "treelstm", "childsumtreelstm", "mvrnn")


class InputError(Exception):
    """A problem with a tree file, vocabulary or weights file; the message says where and what."""


@dataclass
class Tree:
    token: list = field(default_factory=list)
    children: list = field(default_factory=list)

    def size(self):
        return len(self.token)

    def heights(self):
        """Height of every node (leaf = 0); nodes are in post-order so one forward sweep suffices."""
        height = [0] * len(self.token)
        for n, kids in enumerate(self.children):
            if kids:
                height[n] = 1 + max(height[k] for k in kids)
        return height


def tokenize(line):
    """Splits on ASCII space and parentheses only: SST has words with a no-break space inside."""
    tokens, word = [], []
    for ch in line:
        if ch in " ()":
            if word:
                tokens.append("".join(word))
                word = []
            if ch != " ":
                tokens.append(ch)
        else:
            word.append(ch)
    if word:
        tokens.append("".join(word))
    return tokens


def parse_tree(line, where):
    """Parses one PTB bracket tree `(label child...)` / `(label word)` into post-order arrays.

    Steps: 1. keep a stack of open nodes, each a list of finished child indices (or a word);
    2. on ')' emit the node after all its children (post-order) and hand its index to the parent.
    Returns the tree with words in place of token ids (resolved by the caller).
    """
    tokens = tokenize(line.rstrip("\n"))
    tree = Tree()
    stack = []  # each entry: [label, kids, word]
    i = 0
    root_done = False
    while i < len(tokens):
        tok = tokens[i]
        if root_done:
            raise InputError(f"{where}: text after the root's closing ')': '{tok}'")
        if tok == "(":
            if i + 1 >= len(tokens) or tokens[i + 1] in "()":
                raise InputError(f"{where}: expected a label after '('")
            stack.append([tokens[i + 1], [], None])
            i += 2
        elif tok == ")":
            if not stack:
                raise InputError(f"{where}: unbalanced ')'")
            _, kids, word = stack.pop()
            if word is None and not kids:
                raise InputError(f"{where}: node '()' without a word or children")
            n = len(tree.token)
            tree.token.append(word if word is not None else None)
            tree.children.append(kids)
            if stack:
                stack[-1][1].append(n)
            else:
                root_done = True
            i += 1
        else:
            if not stack:
                raise InputError(f"{where}: word '{tok}' outside any '(...)'")
            top = stack[-1]
            if top[1] or top[2] is not None:
                raise InputError(f"{where}: word '{tok}' next to other children; a leaf is (label word)")
            top[2] = tok
            i += 1
    if stack or not root_done:
        raise InputError(f"{where}: unbalanced '(': the tree is not closed")
    return tree


def read_trees(path, limit=None):
    """Reads up to `limit` non-empty lines of a tree file; tokens stay words (str)."""
    trees = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            trees.append(parse_tree(line, f"{path}:{lineno}"))
            if limit is not None and len(trees) >= limit:
                break
    if not trees:
        raise InputError(f"{path}: no trees")
    return trees


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        words = [line.rstrip("\n") for line in f]
    return {w: i for i, w in enumerate(words)}


def vocab_from_trees(trees):
    """Vocabulary of the trees themselves, in order of first appearance."""
    vocab = {}
    for tree in trees:
        for word in tree.token:
            if word is not None and word not in vocab:
                vocab[word] = len(vocab)
    return vocab


def resolve_tokens(trees, vocab, where):
    """Replaces words by vocabulary ids (unknown -> `<unk>` if the vocabulary has it)."""
    unk = vocab.get("<unk>")
    for t, tree in enumerate(trees):
        for n, word in enumerate(tree.token):
            if word is None:
                tree.token[n] = -1
                continue
            wid = vocab.get(word, unk)
            if wid is None:
                raise InputError(f"{where}: tree {t}, node {n}: token '{word}' is not in the vocabulary "
                                 "and it has no <unk>")
            tree.token[n] = wid


def perfect_trees(height, count, vocab_size=1000):
    """`count` perfect binary trees of the given height; leaf tokens cycle through the vocabulary."""
    trees = []
    leaf = 0
    for _ in range(count):
        tree = Tree()
        level = []
        for _ in range(2**height):
            tree.token.append(leaf % vocab_size)
            tree.children.append([])
            level.append(len(tree.token) - 1)
            leaf += 1
        while len(level) > 1:
            nxt = []
            for a, b in zip(level[0::2], level[1::2]):
                tree.token.append(-1)
                tree.children.append([a, b])
                nxt.append(len(tree.token) - 1)
            level = nxt
        trees.append(tree)
    return trees


def compact_tokens(trees):
    """Renumbers token ids to 0..V'-1 over the ids the trees use (in id order); returns V'.

    Random weights (and MV-RNN's per-word H×H matrices, 5.7 GB for all of SST at H=256) then only
    need the rows the run touches.
    """
    used = sorted({w for tree in trees for w in tree.token if w >= 0})
    remap = {w: i for i, w in enumerate(used)}
    for tree in trees:
        tree.token = [remap[w] if w >= 0 else -1 for w in tree.token]
    return len(used)


def load_inputs(args):
    """Trees with token ids from the CLI arguments: --trees/--vocab or --perfect-height."""
    if args.perfect_height is not None:
        trees = perfect_trees(args.perfect_height, args.limit or 100)
    else:
        trees = read_trees(args.trees, args.limit)
        vocab = read_vocab(args.vocab) if args.vocab else vocab_from_trees(trees)
        resolve_tokens(trees, vocab, args.trees)
    return trees


def parameter_shapes(model, hidden, dim, vocab):
    H, D, V = hidden, dim, vocab
    shapes = {
        "treefc": {"emb": [V, H], "W": [H, 2 * H], "b": [H]},
        "treegru": {"emb": [V, D], "W_x": [H, D], "b_x": [H], "U_z": [H, 2 * H], "b_z": [H],
                    "U_r": [2 * H, 2 * H], "b_r": [2 * H], "U_h": [H, 2 * H], "b_h": [H]},
        "treelstm": {"emb": [V, D], "W_iou": [3 * H, D], "U_iou": [3 * H, 2 * H], "b_iou": [3 * H],
                     "U_f": [2 * H, 2 * H], "b_f": [H]},
        "childsumtreelstm": {"emb": [V, D], "W_iou": [3 * H, D], "U_iou": [3 * H, H], "b_iou": [3 * H],
                             "W_f": [H, D], "U_f": [H, H], "b_f": [H]},
        "mvrnn": {"emb": [V, H], "emb_mat": [V, H, H], "W": [H, 2 * H], "bias": [H], "W_M": [H, 2 * H]},
    }
    return shapes[model]


def random_weights(model, hidden, vocab, seed):
    """Seeded uniform weights: matrices U(-1/sqrt(in), 1/sqrt(in)) like nn.Linear, embeddings U(-1, 1),
    MV-RNN word matrices I + U(-0.5, 0.5)/sqrt(H) (near identity, as Socher et al. initialise them)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in parameter_shapes(model, hidden, hidden, vocab).items():
        if name == "emb":
            w = rng.uniform(-1.0, 1.0, shape)
        elif name == "emb_mat":
            w = np.eye(hidden)[None] + rng.uniform(-0.5, 0.5, shape) / np.sqrt(hidden)
        else:
            bound = 1.0 / np.sqrt(shape[-1] if len(shape) == 2 else hidden)
            w = rng.uniform(-bound, bound, shape)
        weights[name] = np.ascontiguousarray(w, dtype=np.float32)
    return weights


def check_weights(weights, model, hidden, vocab, where):
    expected = parameter_shapes(model, hidden, hidden, vocab)
    for name, shape in expected.items():
        if name not in weights:
            raise InputError(f"{where}: missing tensor '{name}', expected shape {shape}")
        if list(weights[name].shape) != shape:
            raise InputError(f"{where}: tensor '{name}' has shape {list(weights[name].shape)}, "
                             f"expected {shape}")
    for name in weights:
        if name not in expected:
            raise InputError(f"{where}: unexpected tensor '{name}' for model {model}")


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise InputError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise InputError(f"{path}: tensor '{name}' has dtype {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(raw[base + begin:base + end], dtype=np.float32).reshape(info["shape"])
    return tensors


def weights_for(args, model, trees):
    """The run's weights: from --weights, else seeded random ones over the compacted vocabulary.

    Token ids stay vocabulary ids when --weights has one `emb` row per vocabulary entry; otherwise
    (and always for random weights) they are compacted to the ids the trees use (see compact_tokens).
    """
    if args.weights:
        weights = read_safetensors(args.weights)
        rows = weights["emb"].shape[0] if "emb" in weights else -1
        max_id = max(w for tree in trees for w in tree.token)
        if rows <= max_id:
            vocab = compact_tokens(trees)
        else:
            vocab = rows
        check_weights(weights, model, args.hidden, vocab, args.weights)
        return weights
    vocab = compact_tokens(trees)
    return random_weights(model, args.hidden, vocab, args.seed)


def add_common_arguments(parser):
    parser.add_argument("--model", required=True, choices=MODELS)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trees", help="SST PTB tree file")
    parser.add_argument("--vocab", help="vocabulary, one token per line (default: the trees' own words)")
    parser.add_argument("--perfect-height", type=int, help="use perfect binary trees of this height")
    parser.add_argument("--limit", type=int, help="use only the first LIMIT trees (perfect trees: 100)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--weights", help="safetensors weights (default: seeded random weights)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="write each tree's root h as a float32 .npy [trees, H]")
