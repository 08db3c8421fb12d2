"""Tests of the grove Python module (python/grove, python/grove_module.cpp), run by ctest with the system
python3 and PYTHONPATH at the build's python directory.

Numbers are checked against an independent float64 NumPy TreeLSTM written here from the equations of
docs/MODELS.md (and an LSTM / DAG-RNN likewise), to 1e-5. Error tests match grove's message text.
Tests that need PyTorch skip, saying so, where `import torch` fails.
"""

import gc
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

import numpy as np

import grove

SOURCE_DIR = Path(os.environ.get("GROVE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
MODELS = SOURCE_DIR / "models"
SST = SOURCE_DIR / "datasets" / "sst"
TREELSTM = MODELS / "treelstm.grove"
TOLERANCE = 1e-5

try:
    import torch
    import torch.utils.dlpack
except ImportError:
    torch = None
NO_TORCH = "PyTorch is not installed (python3-torch): `import torch` failed"

H, D, V = 8, 6, 20


# ---- Independent references (float64, iterative: trees may be deep) -----------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def treelstm_reference(weights, tree):
    """The root h of a binary TreeLSTM (docs/MODELS.md) on a nested tuple of token ids."""
    w = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
    h_size = w["b_f"].shape[0]

    def cell(iou, extra_c):
        i, o, u = sigmoid(iou[:h_size]), sigmoid(iou[h_size:2 * h_size]), np.tanh(iou[2 * h_size:])
        c = i * u + extra_c
        return o * np.tanh(c), c

    stack, states = [(tree, False)], []
    while stack:
        node, children_done = stack.pop()
        if isinstance(node, int):
            states.append(cell(w["W_iou"] @ w["emb"][node] + w["b_iou"], 0.0))
        elif children_done:
            (h_r, c_r), (h_l, c_l) = states.pop(), states.pop()
            s = np.concatenate([h_l, h_r])
            f = sigmoid(w["U_f"] @ s + np.concatenate([w["b_f"], w["b_f"]]))
            states.append(cell(w["U_iou"] @ s + w["b_iou"], f[:h_size] * c_l + f[h_size:] * c_r))
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
    return states[0][0]


def lstm_reference(weights, tokens):
    """PyTorch's nn.LSTM (gates i, f, g, o) from a zero state: the last h."""
    w = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
    h_size = w["W_hh"].shape[1]
    h, c = np.zeros(h_size), np.zeros(h_size)
    for token in tokens:
        g = w["W_ih"] @ w["emb"][token] + w["b_ih"] + w["W_hh"] @ h + w["b_hh"]
        i, f = sigmoid(g[:h_size]), sigmoid(g[h_size:2 * h_size])
        cand, o = np.tanh(g[2 * h_size:3 * h_size]), sigmoid(g[3 * h_size:])
        c = f * c + i * cand
        h = o * np.tanh(c)
    return h


def dagrnn_reference(weights, preds, tokens):
    """Every node's h of a DAG-RNN; preds[v] = two predecessor ids (-1: empty), in any node order."""
    w = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
    n = len(tokens)
    h = [None] * n
    while any(state is None for state in h):
        for v in range(n):
            if h[v] is None and all(p == -1 or h[p] is not None for p in preds[v]):
                h0 = h[preds[v][0]] if preds[v][0] != -1 else np.zeros(len(w["b"]))
                h1 = h[preds[v][1]] if preds[v][1] != -1 else np.zeros(len(w["b"]))
                h[v] = np.tanh(w["U"] @ w["emb"][tokens[v]] + w["W_0"] @ h0 + w["W_1"] @ h1 + w["b"])
    return np.stack(h)


# ---- Inputs and weights ---------------------------------------------------------------------------

def random_weights(rng, shapes):
    return {name: rng.uniform(-0.5, 0.5, size=shape).astype(np.float32) for name, shape in shapes.items()}


def treelstm_weights(rng, v=V, d=D, h=H):
    return random_weights(rng, {"emb": (v, d), "W_iou": (3 * h, d), "U_iou": (3 * h, 2 * h), "b_iou": (3 * h,),
                                "U_f": (2 * h, 2 * h), "b_f": (h,)})


def random_tree(rng, leaves, vocab_size=V):
    """A random binary tree as a nested tuple, built by merging random neighbours."""
    nodes = [int(t) for t in rng.integers(0, vocab_size, size=leaves)]
    while len(nodes) > 1:
        k = int(rng.integers(0, len(nodes) - 1))
        nodes[k:k + 2] = [(nodes[k], nodes[k + 1])]
    return nodes[0]


def to_ptb(tree):
    """A nested tuple as a PTB string with integer tokens (labels 0)."""
    if isinstance(tree, int):
        return f"(0 {tree})"
    return "(0 " + " ".join(to_ptb(child) for child in tree) + ")"


def to_parent_arrays(tree):
    """A nested tuple as (parent, tokens) arrays, nodes numbered in post-order so that children
    come in increasing id order."""
    parent, tokens = [], []
    stack, done = [(tree, False)], []
    while stack:
        node, children_done = stack.pop()
        if isinstance(node, int):
            parent.append(-1)
            tokens.append(node)
            done.append(len(tokens) - 1)
        elif children_done:
            parent.append(-1)
            tokens.append(-1)
            me = len(tokens) - 1
            for child in done[len(done) - len(node):]:
                parent[child] = me
            del done[len(done) - len(node):]
            done.append(me)
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
    return np.array(parent, dtype=np.int64), np.array(tokens, dtype=np.int32)


def write_safetensors(path, weights):
    header, offset, blobs = {}, 0, []
    for name, value in weights.items():
        data = np.ascontiguousarray(value, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        tokens = f.read().split("\n")
    return {token: i for i, token in enumerate(tokens) if token}


def parse_ptb(line, vocab):
    """'(3 (2 It) (4 good))' -> a nested tuple of token ids (labels dropped); an independent reader."""
    atoms = [a for a in line.replace("(", " ( ").replace(")", " ) ").split(" ") if a]
    stack, position = [[]], 0
    while position < len(atoms):
        if atoms[position] == "(":
            stack.append([])
            position += 2
            continue
        if atoms[position] == ")":
            children = stack.pop()
            leaf = len(children) == 1 and isinstance(children[0], int)
            stack[-1].append(children[0] if leaf else tuple(children))
        else:
            stack[-1].append(vocab.get(atoms[position], vocab.get("<unk>")))
        position += 1
    return stack[0][0]


def reference_roots(weights, trees):
    return np.stack([treelstm_reference(weights, tree) for tree in trees])


class GroveTestCase(unittest.TestCase):
    def assertClose(self, actual, expected, tolerance=TOLERANCE):
        actual = np.asarray(actual, dtype=np.float64)
        self.assertEqual(actual.shape, np.shape(expected))
        difference = float(np.max(np.abs(actual - expected))) if actual.size else 0.0
        self.assertLessEqual(difference, tolerance, f"max abs difference {difference} > {tolerance}")


# ---- TreeLSTM numbers ---------------------------------------------------------------------------

class TreeLSTMNumbers(GroveTestCase):
    @classmethod
    def setUpClass(cls):
        cls.rng = np.random.default_rng(7)
        cls.weights = treelstm_weights(cls.rng)
        cls.model = grove.compile(TREELSTM, weights=cls.weights)
        cls.trees = [random_tree(cls.rng, n) for n in (1, 2, 3, 5, 8, 13, 40, 100)]

    def test_matches_numpy_reference(self):
        roots = self.model(self.trees)
        self.assertEqual(roots.dtype, np.float32)
        self.assertClose(roots, reference_roots(self.weights, self.trees))

    def test_deep_tree_matches_reference(self):
        # A 2,000-node left chain: no recursion on the C stack when converting the tuple.
        tree = 0
        for token in range(1, 1000):
            tree = (tree, token % V)
        self.assertClose(self.model([tree]), reference_roots(self.weights, [tree]))

    def test_batch_does_not_change_results(self):
        np.testing.assert_allclose(self.model(self.trees, batch=3), self.model(self.trees), rtol=0, atol=1e-6)

    def test_concurrent_calls(self):
        from concurrent.futures import ThreadPoolExecutor
        expected = self.model(self.trees)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda batch: self.model(self.trees, batch=batch), [0, 1, 2, 3] * 2))
        for result in results:
            np.testing.assert_allclose(result, expected, rtol=0, atol=1e-6)

    def test_runs_release_the_gil(self):
        # While a run of a few hundred milliseconds is inside grove, the main thread keeps running
        # Python: it could not if the run held the GIL.
        import threading
        import time

        def run_watched(many):
            inside, ticks = [], []

            def run():
                start = time.perf_counter()
                self.model(many)
                inside.append((start, time.perf_counter()))
            worker = threading.Thread(target=run)
            worker.start()
            while worker.is_alive():
                ticks.append(time.perf_counter())
            worker.join()
            (start, end), = inside
            return start, end, ticks
        # More trees until the run is long enough to tell (a fast, idle machine needs more).
        for copies in (400, 1600, 6400):
            start, end, ticks = run_watched(self.trees * copies)
            if end - start > 0.05:
                break
        self.assertGreater(end - start, 0.02, "the run was too short to tell")
        during = [t for t in ticks if start + 0.005 < t < end - 0.005]
        self.assertGreater(len(during), 10, f"the main thread ran {len(during)} times during a run of "
                                            f"{(end - start) * 1e3:.0f} ms")

    def test_rebinding_while_threads_run(self):
        # Runs from three threads without pause while the main thread rebinds: each run sees one
        # weight set whole, and the binds finish while the runs go on.
        import threading
        import time
        other = treelstm_weights(np.random.default_rng(17))
        model = grove.compile(TREELSTM, weights=self.weights)
        expected = [model(self.trees)]
        model.bind_weights(other)
        expected.append(model(self.trees))
        self.assertFalse(np.array_equal(expected[0], expected[1]))
        stop, torn, runs = threading.Event(), [], []
        def reader():
            while not stop.is_set():
                out = model(self.trees)
                if not any(np.array_equal(out, e) for e in expected):
                    torn.append(out)
                runs.append(1)
        readers = [threading.Thread(target=reader) for _ in range(3)]
        for r in readers:
            r.start()
        slowest = 0.0
        for i in range(20):
            start = time.perf_counter()
            model.bind_weights(self.weights if i % 2 == 0 else other)
            slowest = max(slowest, time.perf_counter() - start)
            time.sleep(0.001)
        stop.set()
        for r in readers:
            r.join()
        self.assertEqual(len(torn), 0, f"{len(torn)} of {len(runs)} runs mixed two weight sets")
        self.assertLess(slowest, 0.5, f"a bind took {slowest * 1e3:.0f} ms while threads ran")
        np.testing.assert_array_equal(model(self.trees), expected[1])  # i = 19 bound `other`

    def test_an_option_that_cannot_apply_warns(self):
        with self.assertWarnsRegex(UserWarning, "epilogue=on does nothing here"):
            model = grove.compile(TREELSTM, weights=self.weights, schedule="batch=off,epilogue=on")
        self.assertEqual(len(model._model.notes), 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(grove.compile(TREELSTM, weights=self.weights, schedule="batch=off")._model.notes, [])

    def test_bf16_precision(self):
        # precision=bf16 from Python: bf16 weights and GEMM inputs, fp32 accumulation. Where this CPU
        # has no bf16 kernel the model runs in fp32 and grove says so with a warning: then skip.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = grove.compile(TREELSTM, weights=self.weights, schedule="precision=bf16")
        notes = [str(w.message) for w in caught if "precision=bf16 does nothing here" in str(w.message)]
        if notes:
            self.assertIn("precision=fp32", model.schedule)
            self.skipTest(notes[0])
        self.assertIn("precision=bf16", model.schedule)
        roots, exact = model(self.trees), reference_roots(self.weights, self.trees)
        error = float(np.max(np.abs(roots - exact))) / float(np.max(np.abs(exact)))
        self.assertLess(error, 1e-2)
        self.assertGreater(error, 1e-5, "as exact as fp32: did bf16 run?")

    def test_threads_and_schedule_options(self):
        model = grove.compile(TREELSTM, weights=self.weights, threads=1, schedule="batch=off", target="host")
        self.assertIn("threads=1", model.schedule)
        self.assertIn("batch=off", model.schedule)
        self.assertClose(model(self.trees), reference_roots(self.weights, self.trees))

    def test_properties(self):
        self.assertEqual(self.model.params, {"emb": (V, D), "W_iou": (3 * H, D), "U_iou": (3 * H, 2 * H),
                                             "b_iou": (3 * H,), "U_f": (2 * H, 2 * H), "b_f": (H,)})
        self.assertEqual(self.model.output_shape, (H,))
        self.assertEqual(self.model.structure, "binary_tree")
        self.assertEqual(self.model.sizes, {"H": H, "D": D, "V": V})
        self.assertIn("batch=on", self.model.schedule)

    def test_result_owns_its_buffer(self):
        roots = self.model(self.trees)
        # No copy: the array views grove's buffer, kept alive by its base (a capsule).
        self.assertFalse(roots.flags.owndata)
        self.assertIsNotNone(roots.base)
        self.assertTrue(roots.flags.c_contiguous)
        expected = roots.copy()
        gc.collect()
        np.testing.assert_array_equal(roots, expected)


class SSTNumbers(GroveTestCase):
    def test_sst_trees_match_reference(self):
        rng = np.random.default_rng(3)
        vocab = read_vocab(SST / "vocab.txt")
        with open(SST / "test.txt", encoding="utf-8") as f:
            lines = f.read().split("\n")[:60]
        weights = treelstm_weights(rng, v=len(vocab))
        model = grove.compile(TREELSTM, weights=weights, vocab=SST / "vocab.txt")
        trees = [parse_ptb(line, vocab) for line in lines]
        self.assertClose(model(lines), reference_roots(weights, trees))


# ---- Input forms ----------------------------------------------------------------------------------

class InputForms(GroveTestCase):
    @classmethod
    def setUpClass(cls):
        rng = np.random.default_rng(11)
        cls.weights = treelstm_weights(rng)
        cls.model = grove.compile(TREELSTM, weights=cls.weights)
        cls.trees = [random_tree(rng, n) for n in (1, 4, 9, 30)]
        cls.expected = cls.model(cls.trees)

    def test_tuples_match_reference(self):
        self.assertClose(self.expected, reference_roots(self.weights, self.trees))

    def test_ptb_strings(self):
        np.testing.assert_array_equal(self.model([to_ptb(t) for t in self.trees]), self.expected)

    def test_parent_arrays_per_tree(self):
        pairs = [to_parent_arrays(t) for t in self.trees]
        np.testing.assert_array_equal(self.model(pairs), self.expected)
        # Lists of ints work as arrays too.
        lists = [(list(map(int, p)), list(map(int, t))) for p, t in pairs]
        np.testing.assert_array_equal(self.model(lists), self.expected)

    def test_parent_arrays_batched(self):
        pairs = [to_parent_arrays(t) for t in self.trees]
        offsets = np.cumsum([0] + [len(p) for p, _ in pairs])
        parent = np.concatenate([np.where(p >= 0, p + offsets[i], -1) for i, (p, _) in enumerate(pairs)])
        tokens = np.concatenate([t for _, t in pairs])
        roots = self.model(parent=parent, tokens=tokens, node_begin=offsets)
        np.testing.assert_array_equal(roots, self.expected)

    def test_any_node_numbering(self):
        # The parent form takes nodes in any order: reverse the numbering (children then come in
        # decreasing id order, so swap each node's children back by mirroring the tree).
        def mirror(tree):
            return tree if isinstance(tree, int) else tuple(mirror(c) for c in reversed(tree))
        parent, tokens = to_parent_arrays(mirror(self.trees[3]))
        n = len(parent)
        reversed_parent = np.array([n - 1 - p if p >= 0 else -1 for p in parent[::-1]])
        roots = self.model([(reversed_parent, tokens[::-1].copy())])
        np.testing.assert_allclose(roots[0], self.expected[3], rtol=0, atol=1e-6)

    def test_mixed_forms_in_one_list(self):
        mixed = [self.trees[0], to_ptb(self.trees[1]), to_parent_arrays(self.trees[2]), self.trees[3]]
        np.testing.assert_array_equal(self.model(mixed), self.expected)

    def test_vocabulary_path_and_dict(self):
        words = [f"w{i}" for i in range(V)]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "vocab.txt"
            path.write_text("\n".join(words) + "\n", encoding="utf-8")
            tree = ((3, 7), (12, (0, 19)))
            text = "(1 (1 (1 w3) (1 w7)) (1 (1 w12) (1 (1 w0) (1 w19))))"
            expected = self.model([tree])
            np.testing.assert_array_equal(self.model([text], vocab=path), expected)
            np.testing.assert_array_equal(self.model([text], vocab={w: i for i, w in enumerate(words)}), expected)
            # A dict's ids need not be its order.
            shuffled = {w: i for i, w in reversed(list(enumerate(words)))}
            np.testing.assert_array_equal(self.model([text], vocab=shuffled), expected)
            with_vocab = grove.compile(TREELSTM, weights=self.weights, vocab=str(path))
            np.testing.assert_array_equal(with_vocab([text]), expected)

    def test_numpy_integer_leaves(self):
        tree = (np.int64(3), (np.int32(4), 5))
        np.testing.assert_array_equal(self.model([tree]), self.model([(3, (4, 5))]))


# ---- Weights --------------------------------------------------------------------------------------

class Weights(GroveTestCase):
    def test_safetensors_path_and_dict_agree(self):
        rng = np.random.default_rng(5)
        weights = treelstm_weights(rng)
        trees = [random_tree(rng, n) for n in (2, 7, 20)]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "w.safetensors"
            write_safetensors(path, weights)
            from_file = grove.compile(TREELSTM, weights=path)(trees)
        from_dict = grove.compile(TREELSTM, weights=weights)(trees)
        np.testing.assert_array_equal(from_file, from_dict)
        self.assertClose(from_dict, reference_roots(weights, trees))

    def test_other_dtypes_are_cast(self):
        rng = np.random.default_rng(6)
        weights = treelstm_weights(rng)
        as_float64 = {name: value.astype(np.float64) for name, value in weights.items()}
        as_float64["emb"] = np.asfortranarray(as_float64["emb"])  # any memory order
        trees = [random_tree(rng, 6)]
        np.testing.assert_array_equal(grove.compile(TREELSTM, weights=as_float64)(trees),
                                      grove.compile(TREELSTM, weights=weights)(trees))

    def test_sizes_give_seeded_weights_then_bind(self):
        model = grove.compile(TREELSTM, sizes="H=8,D=6,V=20")
        self.assertEqual(model.sizes, {"H": 8, "D": 6, "V": 20})
        rng = np.random.default_rng(8)
        weights = treelstm_weights(rng)
        trees = [random_tree(rng, 5)]
        model.bind_weights(weights)
        self.assertClose(model(trees), reference_roots(weights, trees))

    def test_sizes_that_agree_with_weights(self):
        weights = treelstm_weights(np.random.default_rng(9))
        model = grove.compile(TREELSTM, weights=weights, sizes={"H": H})
        self.assertEqual(model.output_shape, (H,))


# ---- Sequence and DAG models ----------------------------------------------------------------------

class SequencesAndDags(GroveTestCase):
    def test_lstm_sequences(self):
        rng = np.random.default_rng(12)
        weights = random_weights(rng, {"emb": (V, D), "W_ih": (4 * H, D), "W_hh": (4 * H, H), "b_ih": (4 * H,),
                                       "b_hh": (4 * H,)})
        model = grove.compile(MODELS / "lstm.grove", weights=weights)
        sequences = [[1, 2, 3], [4], list(range(20)), np.array([5, 6, 7, 8, 9])]
        expected = np.stack([lstm_reference(weights, s) for s in sequences])
        self.assertClose(model.run_sequences(sequences), expected)

    def test_dagrnn_dags(self):
        rng = np.random.default_rng(13)
        weights = random_weights(rng, {"emb": (V, D), "U": (H, D), "W_0": (H, H), "W_1": (H, H), "b": (H,)})
        model = grove.compile(MODELS / "dagrnn.grove", weights=weights)
        preds = np.array([[-1, -1], [0, -1], [0, 1], [2, 1], [-1, -1], [4, 3]])
        tokens = np.array([1, 2, 3, 4, 5, 6])
        states = dagrnn_reference(weights, preds.tolist(), tokens.tolist())
        self.assertClose(model.run_dags([(preds, tokens)], outputs="all_nodes"), states)
        self.assertClose(model.run_dags([(preds, tokens)]), states[[5]])


# ---- Errors ---------------------------------------------------------------------------------------

class Errors(GroveTestCase):
    @classmethod
    def setUpClass(cls):
        cls.weights = treelstm_weights(np.random.default_rng(4))
        cls.model = grove.compile(TREELSTM, weights=cls.weights)

    def assertGroveError(self, text, function, *args, **kwargs):
        with self.assertRaises(grove.GroveError) as caught:
            function(*args, **kwargs)
        self.assertIn(text, str(caught.exception))

    def assertTypeError(self, text, function, *args, **kwargs):
        with self.assertRaises(TypeError) as caught:
            function(*args, **kwargs)
        self.assertIn(text, str(caught.exception))

    def test_grove_error_is_a_value_error(self):
        self.assertTrue(issubclass(grove.GroveError, ValueError))

    def test_bad_tree_string_names_position(self):
        self.assertGroveError("trees:2:15: missing ')': expected ')' to close the node opened at column 1, found end of line",
                              self.model, ["(0 (0 1) (0 2))", "(3 (2 1) (4 2)"])

    def test_unknown_token(self):
        self.assertGroveError("token 'zebra' is not in the vocabulary 'the vocab dict', which has no '<unk>' line",
                              self.model, ["(1 (1 a) (1 zebra))"], vocab={"a": 0, "b": 1})

    def test_token_out_of_range(self):
        self.assertGroveError(f"tree 2, node 1: token {V} is out of range: the vocabulary has {V} entries",
                              self.model, [(1, 2), (1, V)])

    def test_unknown_weight_name(self):
        weights = dict(self.weights, W_extra=np.zeros(3, np.float32))
        self.assertGroveError("weights: tensor 'W_extra' is not a parameter of model 'TreeLSTM'",
                              grove.compile, TREELSTM, weights=weights)

    def test_missing_weight(self):
        weights = {k: v for k, v in self.weights.items() if k != "U_f"}
        self.assertGroveError(f"weights: missing tensor 'U_f' (the model expects shape [2H, 2H] = [{2 * H}, {2 * H}])",
                              grove.compile, TREELSTM, weights=weights)

    def test_wrong_shape(self):
        weights = dict(self.weights, U_f=np.zeros(2 * H, np.float32))
        self.assertGroveError(f"weights: tensor 'U_f' has shape [{2 * H}] (rank 1) but the model expects shape "
                              "[2H, 2H] (rank 2)", grove.compile, TREELSTM, weights=weights)
        weights = dict(self.weights, U_f=np.zeros((2 * H, H), np.float32))
        self.assertGroveError(f"weights: size H = {H} from tensor 'W_iou' but {H // 2} from tensor 'U_f'",
                              grove.compile, TREELSTM, weights=weights)

    def test_wrong_shape_on_rebind(self):
        weights = dict(self.weights, b_f=np.zeros(H + 1, np.float32))
        model = grove.compile(TREELSTM, weights=self.weights)
        self.assertGroveError("weights: tensor 'b_f' has shape", model.bind_weights, weights)

    def test_sizes_disagree_with_weights(self):
        self.assertGroveError(f"sizes: H = 4 but the weights give H = {H}",
                              grove.compile, TREELSTM, weights=self.weights, sizes="H=4")

    def test_bad_options(self):
        self.assertGroveError("threads must be at least 1, got 0", grove.compile, TREELSTM, weights=self.weights,
                              threads=0)
        self.assertGroveError("nosuchkey", grove.compile, TREELSTM, weights=self.weights, schedule="nosuchkey=1")

    def test_neither_weights_nor_sizes(self):
        self.assertGroveError("give weights", grove.compile, TREELSTM)

    def test_missing_model_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertGroveError("nothing.grove", grove.compile, Path(tmp) / "nothing.grove", sizes="H=2")

    def test_bad_weights_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "w.safetensors"
            path.write_bytes(b"\x01\x02")
            self.assertGroveError("not a safetensors file", grove.compile, TREELSTM, weights=path)

    def test_weight_types(self):
        self.assertTypeError("weights: expected a safetensors path", grove.compile, TREELSTM, weights=5)
        self.assertTypeError("weights['emb']: expected a real numeric array to convert to float32, got dtype <U3",
                             grove.compile, TREELSTM, weights=dict(self.weights, emb="abc"))
        self.assertTypeError("weights['emb']: expected a real numeric array",
                             grove.compile, TREELSTM, weights=dict(self.weights, emb=np.array([{}, 1])))
        self.assertTypeError("weights: every key must be a str", grove.compile, TREELSTM, weights={1: self.weights["emb"]})

    def test_tree_types(self):
        self.assertTypeError("trees: expected a list of trees, got str", self.model, "(0 1)")
        self.assertTypeError("tree 2: expected a PTB string", self.model, [(1, 2), 3.5])
        self.assertTypeError("tree 1: a nested tuple holds token ids (int) at its leaves and tuples of children "
                             "inside, found float", self.model, [(1, 2.0)])
        self.assertTypeError("tree 1 parent: expected an integer array, got dtype float64", self.model,
                             [(np.array([-1.0, 0.0, 0.0]), np.array([-1, 1, 2]))])
        self.assertTypeError("incompatible function arguments", self.model, [(1, 2)], batch="x")

    def test_parent_array_errors(self):
        self.assertGroveError("tree 1: nodes 0 and 2 both have parent -1", self.model,
                              [(np.array([-1, 0, -1]), np.array([-1, 1, 2]))])
        self.assertGroveError("tree 1: parent[1] = 5 is not a node of the tree (nodes 0..2)", self.model,
                              [(np.array([-1, 5, 0]), np.array([-1, 1, 2]))])
        self.assertGroveError("tree 1: parent has 3 entries but tokens has 2", self.model,
                              [(np.array([-1, 0, 0]), np.array([-1, 1]))])
        self.assertGroveError("node_begin: expected non-decreasing offsets from 0 to 3", self.model,
                              parent=[-1, 0, 0], tokens=[-1, 1, 2], node_begin=[0, 2])

    def test_negative_batch(self):
        self.assertGroveError("batch must be at least 0", self.model, [(1, 2)], batch=-1)

    def test_dags_for_a_tree_model(self):
        self.assertGroveError("it runs over trees", self.model.run_sequences, [[1, 2]])


# ---- DLPack and PyTorch ---------------------------------------------------------------------------

class DLPack(GroveTestCase):
    def test_numpy_from_dlpack_shares_the_buffer(self):
        model = grove.compile(TREELSTM, weights=treelstm_weights(np.random.default_rng(2)))
        trees = [(1, 2), ((3, 4), 5)]
        exported = model._model.run_trees(trees, dlpack=True)
        self.assertEqual(exported.shape, (2, H))
        array = np.from_dlpack(exported)
        self.assertEqual(array.__array_interface__["data"][0], exported.data_ptr)
        del exported
        gc.collect()
        np.testing.assert_array_equal(array, model(trees))

    def test_unconsumed_export_is_freed(self):
        model = grove.compile(TREELSTM, weights=treelstm_weights(np.random.default_rng(2)))
        exported = model._model.run_trees([(1, 2)], dlpack=True)
        capsule = exported.__dlpack__()
        with self.assertRaisesRegex(BufferError, "already exported through DLPack"):
            exported.__dlpack__()
        with self.assertRaisesRegex(ValueError, "a CPU tensor takes stream=None, got 1"):
            model._model.run_trees([(1, 2)], dlpack=True).__dlpack__(stream=1)
        del capsule, exported  # the capsule's destructor frees the tensor (checked under ASan by the C++ side)


class NoTorchNeeded(GroveTestCase):
    def test_torch_is_not_imported_for_numpy_use(self):
        code = ("import sys, grove; m = grove.compile(sys.argv[1], sizes='H=2,D=2,V=3'); "
                "m([(0, 1)]); m.bind_weights({k: __import__('numpy').zeros(s) for k, s in m.params.items()}); "
                "assert 'torch' not in sys.modules, 'torch was imported'")
        run = subprocess.run([sys.executable, "-B", "-c", code, str(TREELSTM)], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)


@unittest.skipIf(torch is None, NO_TORCH)
class Torch(GroveTestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, str(SOURCE_DIR / "python" / "examples"))
        from pytorch_treelstm import TreeLSTM
        cls.module = TreeLSTM(V, D, H, seed=3)
        cls.model = grove.compile(TREELSTM, weights=cls.module.state_dict())
        cls.trees = [random_tree(np.random.default_rng(1), n) for n in (1, 3, 17)]

    def test_state_dict_weights(self):
        weights = {name: value.detach().numpy() for name, value in self.module.state_dict().items()}
        self.assertClose(self.model(self.trees), reference_roots(weights, self.trees))
        with torch.no_grad():
            expected = torch.stack([self.module(tree) for tree in self.trees]).numpy()
        self.assertClose(self.model(self.trees), expected)

    def test_torch_inputs_give_a_torch_tensor_without_copy(self):
        pairs = [to_parent_arrays(t) for t in self.trees]
        torch_pairs = [(torch.from_numpy(p), torch.from_numpy(t.astype(np.int64))) for p, t in pairs]
        roots = self.model(torch_pairs)
        self.assertIsInstance(roots, torch.Tensor)
        self.assertEqual(roots.dtype, torch.float32)
        np.testing.assert_array_equal(roots.numpy(), self.model(self.trees))
        # The tensor is grove's buffer itself: the address the export reported.
        exported = self.model._model.run_trees(self.trees, dlpack=True)
        address = exported.data_ptr
        tensor = torch.utils.dlpack.from_dlpack(exported)
        self.assertEqual(tensor.data_ptr(), address)
        del exported
        gc.collect()
        np.testing.assert_array_equal(tensor.numpy(), self.model(self.trees))

    def test_batched_torch_arrays_and_as_torch(self):
        parent, tokens = to_parent_arrays(self.trees[2])
        roots = self.model(parent=torch.from_numpy(parent), tokens=torch.from_numpy(tokens.astype(np.int64)),
                           node_begin=torch.tensor([0, len(parent)]))
        self.assertIsInstance(roots, torch.Tensor)
        self.assertIsInstance(self.model([to_ptb(self.trees[0])], as_torch=True), torch.Tensor)
        self.assertIsInstance(self.model(self.trees), np.ndarray)
        self.assertIsInstance(self.model(torch_pairs_of(self.trees), as_torch=False), np.ndarray)

    def test_example_runs(self):
        env = dict(os.environ, GROVE_SOURCE_DIR=str(SOURCE_DIR))
        example = SOURCE_DIR / "python" / "examples" / "pytorch_treelstm.py"
        run = subprocess.run([sys.executable, "-B", str(example), "--trees", "20", "--hidden", "16", "--runs", "1"],
                             env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("speed-up", run.stdout)
        difference = float(run.stdout.split("max abs difference of the roots: ")[1].split()[0])
        self.assertLessEqual(difference, TOLERANCE)


def torch_pairs_of(trees):
    return [tuple(torch.from_numpy(a.astype(np.int64)) for a in to_parent_arrays(t)) for t in trees]


# ---- target="cuda" ------------------------------------------------------------------------------

GROVE_BINARY = os.environ.get("GROVE_BINARY")
FAKE_CUDA = os.environ.get("GROVE_FAKE_CUDA")  # tests/backends/cuda/FakeDriver.cpp, the driver over host memory
CUDA_ROOT = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))


def host_kernels(directory, sizes, cuda_options):
    """The host build of TreeLSTM's CUDA kernels at `sizes` in the form `cuda_options`, which the fake
    driver runs in place of the cubin: `grove dump --stage cuda` built against backends/cuda/Simt.h,
    as the C++ suites' emulation builds it (backends/cuda/HostEmulation.cpp)."""
    source, library = Path(directory) / "kernels.cpp", Path(directory) / "kernels.so"
    text = subprocess.run([GROVE_BINARY, "dump", str(TREELSTM), "--stage", "cuda", "--sizes", sizes,
                           "--cuda", cuda_options], check=True, capture_output=True, text=True).stdout
    source.write_text(text)
    subprocess.run([os.environ.get("CXX", "c++"), "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread",
                    "-ffp-contract=off", f"-I{CUDA_ROOT / 'include' / 'cccl'}", "-include",
                    str(SOURCE_DIR / "backends" / "cuda" / "Simt.h"), "-o", str(library), str(source)],
                   check=True, capture_output=True, text=True)
    return str(library)


class CudaTarget(GroveTestCase):
    """grove.compile(..., target="cuda"): the model's kernels through the device runner. This machine has
    no GPU: the runs go through the fake driver, which runs the same kernels' host build."""

    def test_without_a_driver_is_a_grove_error(self):
        # Its own process: the driver is loaded once per process.
        script = ("import grove, sys\n"
                  "try:\n"
                  f"    grove.compile({str(TREELSTM)!r}, sizes={{'H': 8, 'D': 6, 'V': 20}}, target='cuda')\n"
                  "except grove.GroveError as e:\n"
                  "    print(e); sys.exit(3)\n")
        env = dict(os.environ, GROVE_CUDA_DRIVER="/nonexistent/libcuda.so.1")
        r = subprocess.run([sys.executable, "-B", "-c", script], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("no CUDA driver", r.stdout)
        self.assertIn("/nonexistent/libcuda.so.1", r.stdout)

    def test_cuda_options_need_the_cuda_target(self):
        with self.assertRaises(grove.GroveError) as caught:
            grove.compile(TREELSTM, sizes={"H": 8, "D": 6, "V": 20}, cuda="form=per_level")
        self.assertIn("cuda", str(caught.exception))

    def test_both_forms_match_the_reference(self):
        if not (GROVE_BINARY and FAKE_CUDA):
            self.skipTest("the fake CUDA driver or the grove binary was not built ($GROVE_FAKE_CUDA, "
                          "$GROVE_BINARY): tests/backends/cuda builds them")
        rng = np.random.default_rng(11)
        weights = treelstm_weights(rng)
        trees = [random_tree(rng, n) for n in (1, 2, 3, 7, 20)]
        expected = reference_roots(weights, trees)
        os.environ["GROVE_CUDA_DRIVER"] = FAKE_CUDA
        with tempfile.TemporaryDirectory() as tmp:
            for form in ("form=persistent", "form=per_level"):  # graph=off: the C++ suites
                with self.subTest(form=form):
                    directory = Path(tmp) / form.replace("=", "_").replace(",", "_")
                    directory.mkdir()
                    os.environ["GROVE_FAKE_CUDA_KERNELS"] = host_kernels(directory, f"H={H},D={D},V={V}", form)
                    model = grove.compile(TREELSTM, weights=weights, target="cuda", cuda=form)
                    self.assertEqual(model.target, "cuda")
                    self.assertClose(model(trees), expected)
                    self.assertClose(model(trees, batch=2), expected)


if __name__ == "__main__":
    unittest.main()
