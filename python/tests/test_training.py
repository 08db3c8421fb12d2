"""Tests of training from Python (python/grove/training.py, python/TrainingBindings.cpp), run by ctest
with the system python3 and PYTHONPATH at the build's python directory.

* Gradients of grove.TrainableModel against central finite differences of independent float64 NumPy
  models written here (TreeFC and TreeLSTM, every node's state, docs/MODELS.md), and against the C++
  trainer's (Trainer.loss_and_grad, with the head's loss computed here in NumPy).
* grove.Trainer and grove.train against `grove train` (GROVE_BINARY): the same checkpoint bytes for
  the same options and seed; step() over the epoch's shuffled batches equals train(); the same seed
  twice gives bit-identical weights; save/resume continues the uninterrupted run; a short run's loss
  falls.
* Bad input raises grove.GroveError (or TypeError) with grove's message.
"""

import os
import subprocess
import tempfile
import threading
import unittest
from pathlib import Path

import numpy as np

import grove

SOURCE_DIR = Path(os.environ.get("GROVE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
MODELS = SOURCE_DIR / "models"
SST = SOURCE_DIR / "datasets" / "sst"
TREEFC = MODELS / "treefc.grove"
TREELSTM = MODELS / "treelstm.grove"
GROVE_BINARY = os.environ.get("GROVE_BINARY")

# Labelled trees with integer tokens (no vocabulary), as tests/tools/test_cli_train.cpp trains.
TRAIN = ["(3 (2 0) (4 (2 1) (4 2)))", "(1 (0 3) (2 1))", "(4 (4 2) (3 2))", "(0 (0 3) (1 (0 3) (2 4)))",
         "(2 (2 1) (2 4))", "(3 (4 2) (2 (2 1) (3 0)))", "(1 (1 3) (2 0))"]
DEV = ["(1 (0 3) (2 1))", "(4 (4 2) (3 0))"]


# ---- Independent references (float64): every node's state, post-order ---------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def post_order(tree, leaf, internal):
    """Every node's state of a nested tuple of token ids, children before parents (grove's order)."""
    out, stack, done = [], [(tree, False)], []
    while stack:
        node, children_done = stack.pop()
        if isinstance(node, int):
            state = leaf(node)
        elif children_done:
            children = done[len(done) - len(node):]
            del done[len(done) - len(node):]
            state = internal(children)
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
            continue
        out.append(state)
        done.append(state)
    return out


def treefc_states(w, tree):
    return [h for h in post_order(tree, lambda t: w["emb"][t],
                                  lambda ch: np.tanh(w["W"] @ np.concatenate(ch) + w["b"]))]


def treelstm_states(w, tree):
    h_size = w["b_f"].shape[0]

    def cell(iou, extra_c):
        i, o, u = sigmoid(iou[:h_size]), sigmoid(iou[h_size:2 * h_size]), np.tanh(iou[2 * h_size:])
        c = i * u + extra_c
        return o * np.tanh(c), c

    def internal(children):
        (h_l, c_l), (h_r, c_r) = children
        s = np.concatenate([h_l, h_r])
        f = sigmoid(w["U_f"] @ s + np.concatenate([w["b_f"], w["b_f"]]))
        return cell(w["U_iou"] @ s + w["b_iou"], f[:h_size] * c_l + f[h_size:] * c_r)

    return [h for h, _ in post_order(tree, lambda t: cell(w["W_iou"] @ w["emb"][t] + w["b_iou"], 0.0), internal)]


def all_states(states_of, weights, trees):
    w = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
    return np.concatenate([np.stack(states_of(w, tree)) for tree in trees])


def finite_differences(states_of, weights, trees, d_rows, eps=1e-6):
    """d(sum(d_rows * states))/d(every weight), by central differences in float64."""
    base = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
    grads = {}
    for name, value in base.items():
        g = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            plus, minus = dict(base), dict(base)
            plus[name], minus[name] = value.copy(), value.copy()
            plus[name][index] += eps
            minus[name][index] -= eps
            g[index] = (np.sum(d_rows * all_states(states_of, plus, trees)) -
                        np.sum(d_rows * all_states(states_of, minus, trees))) / (2 * eps)
        grads[name] = g
    return grads


def random_tree(rng, leaves, vocab_size):
    nodes = [int(t) for t in rng.integers(0, vocab_size, size=leaves)]
    while len(nodes) > 1:
        k = int(rng.integers(0, len(nodes) - 1))
        nodes[k:k + 2] = [(nodes[k], nodes[k + 1])]
    return nodes[0]


def head_reference(states, labels, head):
    """The head's mean cross-entropy over labelled nodes and d(loss)/d(states), float64."""
    w, b = head["head.weight"].astype(np.float64), head["head.bias"].astype(np.float64)
    z = states.astype(np.float64) @ w.T + b
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    loss = -np.mean(np.log(p[rows, labels]))
    dz = p.copy()
    dz[rows, labels] -= 1.0
    dz /= len(labels)
    return loss, dz @ w


def labels_post_order(line):
    """Every node's label of a labelled PTB string, post-order (an independent reader)."""
    atoms = [a for a in line.replace("(", " ( ").replace(")", " ) ").split(" ") if a]
    labels, stack, i = [], [], 0
    while i < len(atoms):
        if atoms[i] == "(":
            stack.append(int(atoms[i + 1]))
            i += 2
        elif atoms[i] == ")":
            labels.append(stack.pop())
            i += 1
        else:
            i += 1
    return labels


def write_lines(path, lines):
    Path(path).write_text("\n".join(lines) + "\n")


class GroveTestCase(unittest.TestCase):
    def assertGradClose(self, actual, expected, relative=1e-4, what=""):
        actual = np.asarray(actual, dtype=np.float64)
        self.assertEqual(actual.shape, expected.shape, what)
        scale = max(float(np.max(np.abs(expected))), 1e-3)
        difference = float(np.max(np.abs(actual - expected)))
        self.assertLessEqual(difference, relative * scale, f"{what}: max |g - g_ref| {difference}, max |g_ref| {scale}")

    def assertSameWeights(self, a, b):
        self.assertEqual(sorted(a), sorted(b))
        for name in a:
            self.assertTrue(np.array_equal(a[name], b[name]), f"{name} differs")

    def assertGroveError(self, text, function, *args, **kwargs):
        with self.assertRaises(grove.GroveError) as caught:
            function(*args, **kwargs)
        self.assertIn(text, str(caught.exception))


# ---- grove.TrainableModel ------------------------------------------------------------------------

class Gradients(GroveTestCase):
    def check_model(self, path, states_of, weights, trees):
        model = grove.TrainableModel(path, weights)
        states = model.forward(trees)
        expected = all_states(states_of, weights, trees)
        self.assertEqual(states.dtype, np.float32)
        self.assertEqual(states.shape, expected.shape)
        self.assertLessEqual(float(np.max(np.abs(states - expected))), 1e-5)
        self.assertEqual(list(model.tree_offset), list(np.cumsum([0] + [len(states_of(
            {k: np.asarray(v, np.float64) for k, v in weights.items()}, t)) for t in trees])))
        rng = np.random.default_rng(5)
        d_rows = rng.uniform(-1, 1, size=states.shape).astype(np.float32)
        grads = model.backward(d_rows)
        reference = finite_differences(states_of, weights, trees, d_rows.astype(np.float64))
        emb = model.embedding
        self.assertEqual(emb, "emb")
        self.assertEqual(sorted(grads), sorted(name for name in weights if name != emb))
        for name in grads:
            self.assertEqual(grads[name].dtype, np.float32)
            self.assertGradClose(grads[name], reference[name], what=name)
        # The embedding: exactly the rows the leaves read, ascending; every other row's FD is zero.
        tokens = sorted({t for tree in trees for t in _leaves(tree)})
        self.assertEqual(list(grads.embedding_rows), tokens)
        self.assertGradClose(grads.embedding_dense(weights[emb].shape[0]), reference[emb], what=emb)
        untouched = [r for r in range(weights[emb].shape[0]) if r not in tokens]
        self.assertTrue(np.all(reference[emb][untouched] == 0.0))
        full = grads.full(model.params)
        self.assertEqual(full[emb].shape, weights[emb].shape)
        return model

    def test_treefc_matches_finite_differences(self):
        rng = np.random.default_rng(1)
        h, v = 3, 7
        weights = {"emb": rng.uniform(-0.8, 0.8, (v, h)), "W": rng.uniform(-0.8, 0.8, (h, 2 * h)),
                   "b": rng.uniform(-0.5, 0.5, (h,))}
        weights = {k: x.astype(np.float32) for k, x in weights.items()}
        trees = [random_tree(rng, n, v - 2) for n in (1, 2, 5, 9)]  # rows v-2, v-1 never read
        model = self.check_model(TREEFC, treefc_states, weights, trees)
        self.assertEqual(model.params, {"emb": (v, h), "W": (h, 2 * h), "b": (h,)})

    def test_treelstm_matches_finite_differences(self):
        rng = np.random.default_rng(2)
        h, d, v = 2, 3, 6
        shapes = {"emb": (v, d), "W_iou": (3 * h, d), "U_iou": (3 * h, 2 * h), "b_iou": (3 * h,),
                  "U_f": (2 * h, 2 * h), "b_f": (h,)}
        weights = {k: rng.uniform(-0.8, 0.8, s).astype(np.float32) for k, s in shapes.items()}
        trees = [random_tree(rng, n, v - 1) for n in (3, 1, 6)]
        self.check_model(TREELSTM, treelstm_states, weights, trees)

    def test_the_trainers_gradients_are_the_models(self):
        """Trainer.loss_and_grad (the C++ head and trainer) against TrainableModel.backward of the head's
        d(loss)/d(states) computed here, from the same weights."""
        trainer = grove.Trainer(TREEFC, sizes="H=5", trees=[TRAIN], dropout=0.0, seed=4)
        model = grove.TrainableModel(TREEFC, trainer.weights())
        batch = TRAIN[:4]
        loss, grads = trainer.loss_and_grad(batch)
        states = model.forward(batch)
        labels = np.concatenate([labels_post_order(line) for line in batch])
        ref_loss, d_rows = head_reference(states, labels, trainer.head())
        self.assertAlmostEqual(loss, ref_loss, delta=1e-5 * abs(ref_loss))
        mine = model.backward(d_rows.astype(np.float32))
        for name in mine:
            self.assertGradClose(grads[name], mine[name].astype(np.float64), relative=1e-5, what=name)
        self.assertEqual(list(grads.embedding_rows), list(mine.embedding_rows))
        self.assertGradClose(grads.embedding_grad, mine.embedding_grad.astype(np.float64), relative=1e-5)
        self.assertEqual(sorted(set(grads) - set(mine)), ["head.bias", "head.weight"])
        # Nothing was updated: the next step's loss is this one.
        self.assertEqual(trainer.step(batch), loss)
        self.assertEqual(trainer.state["steps"], 1)

    def test_ptb_strings_vocab_and_set_weights(self):
        vocab = {"a": 0, "b": 1, "c": 2}
        model = grove.TrainableModel(TREEFC, sizes="H=4,V=3", seed=7, vocab=vocab)
        by_ids = model.forward([((0, 1), 2)])
        self.assertTrue(np.array_equal(model.forward(["(0 (0 (0 a) (0 b)) (0 c))"]), by_ids))
        weights = model.weights()
        weights["b"] = weights["b"] + 1.0
        model.set_weights(weights)
        self.assertFalse(np.array_equal(model.forward([((0, 1), 2)]), by_ids))
        self.assertTrue(np.array_equal(model.weights()["b"], weights["b"]))

    def test_forward_and_backward_release_the_gil(self):
        # While a forward + backward is inside grove, the main thread keeps running Python.
        import time

        model = grove.TrainableModel(TREELSTM, sizes="H=32,D=32,V=50")
        rng = np.random.default_rng(3)
        base = [random_tree(rng, 12, 50) for _ in range(50)]
        for copies in (8, 32, 128):
            trees = base * copies
            inside, ticks = [], []

            def run():
                start = time.perf_counter()
                h = model.forward(trees)
                model.backward(np.ones_like(h))
                inside.append((start, time.perf_counter()))

            worker = threading.Thread(target=run)
            worker.start()
            while worker.is_alive():
                ticks.append(time.perf_counter())
            worker.join()
            (start, end), = inside
            if end - start > 0.05:
                break
        self.assertGreater(end - start, 0.02, "the run was too short to tell")
        during = [t for t in ticks if start + 0.005 < t < end - 0.005]
        self.assertGreater(len(during), 10, f"the main thread ran {len(during)} times during {end - start:.3f} s")

    def test_concurrent_calls(self):
        model = grove.TrainableModel(TREEFC, sizes="H=8,V=10")
        trees = [((1, 2), (3, (4, 5)))] * 20
        expected = model.forward(trees)
        results, errors = [], []

        def run():
            try:
                for _ in range(20):
                    results.append(model.forward(trees))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertTrue(all(np.array_equal(r, expected) for r in results))


def _leaves(tree):
    if isinstance(tree, int):
        return [tree]
    return [t for child in tree for t in _leaves(child)]


class ModelErrors(GroveTestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = grove.TrainableModel(TREEFC, sizes="H=4,V=5")

    def test_backward_before_forward(self):
        model = grove.TrainableModel(TREEFC, sizes="H=4,V=5")
        self.assertGroveError("backward(): no forward() to differentiate", model.backward, np.zeros((1, 4), np.float32))

    def test_a_failed_forward_leaves_none(self):
        model = grove.TrainableModel(TREEFC, sizes="H=4,V=5")
        model.forward([(1, 2)])
        with self.assertRaises(grove.GroveError):
            model.forward([(1, 9)])  # token 9 of a vocabulary of 5
        self.assertGroveError("no forward()", model.backward, np.zeros((3, 4), np.float32))

    def test_d_rows_shape_and_dtype(self):
        self.model.forward([(1, 2), 3])
        self.assertGroveError("d_rows: expected shape [4, 4]", self.model.backward, np.zeros((3, 4), np.float32))
        self.assertGroveError("got [4, 4, 1]", self.model.backward, np.zeros((4, 4, 1), np.float32))
        self.assertGroveError("expected a floating-point array, got dtype int64", self.model.backward,
                              np.zeros((4, 4), np.int64))
        with self.assertRaises(TypeError):
            self.model.backward(object())
        # float64 is cast; a Fortran-ordered array is copied.
        g64 = self.model.backward(np.ones((4, 4)))
        g32 = self.model.backward(np.asfortranarray(np.ones((4, 4), np.float32)))
        self.assertTrue(np.array_equal(g64["W"], g32["W"]))

    def test_bad_weights(self):
        weights = self.model.weights()
        self.assertGroveError("W", self.model.set_weights, {k: v for k, v in weights.items() if k != "W"})
        self.assertGroveError("the model expects shape [H, 2H] = [4, 8]", self.model.set_weights,
                              dict(weights, W=np.zeros((4, 4), np.float32)))
        self.assertGroveError("tensor 'nonsense' is not a parameter", self.model.set_weights,
                              dict(weights, nonsense=np.zeros(3, np.float32)))
        with self.assertRaises(TypeError):
            self.model.set_weights(42)
        # A failed set_weights keeps the weights it had.
        self.assertSameWeights(self.model.weights(), weights)

    def test_bad_model_arguments(self):
        self.assertGroveError("give weights", grove.TrainableModel, TREEFC)
        self.assertGroveError("nonexistent", grove.TrainableModel, MODELS / "nonexistent.grove", sizes="H=4,V=5")
        self.assertGroveError("threads must be at least 1", grove.TrainableModel, TREEFC, sizes="H=4,V=5", threads=0)
        self.assertGroveError("sizes: H = 3 but the weights give H = 4", grove.TrainableModel, TREEFC,
                              self.model.weights(), sizes="H=3")

    def test_bad_trees(self):
        self.assertGroveError("trees:1:12: missing ')'", self.model.forward, ["(0 (0 1) (0"])
        with self.assertRaises(TypeError):
            self.model.forward([1.5])


# ---- grove.Trainer and grove.train -----------------------------------------------------------------

class Training(GroveTestCase):
    def test_same_seed_same_weights(self):
        def run(seed):
            trainer = grove.Trainer(TREEFC, sizes="H=6", trees=[TRAIN], seed=seed, dropout=0.5, batch=3)
            losses = [trainer.step(TRAIN[i:i + 3]) for i in (0, 3, 4, 1)]
            trainer.train(TRAIN, DEV, epochs=2)
            return trainer.weights(), trainer.head(), losses

        a, b, c = run(3), run(3), run(4)
        self.assertSameWeights(a[0], b[0])
        self.assertSameWeights(a[1], b[1])
        self.assertEqual(a[2], b[2])
        self.assertFalse(np.array_equal(a[0]["W"], c[0]["W"]))

    def test_steps_over_the_shuffled_batches_are_train(self):
        options = dict(sizes="H=5", trees=[TRAIN], seed=9, dropout=0.3, batch=2, optimizer="adam", clip=1.0)
        whole = grove.Trainer(TREEFC, **options)
        reports = whole.train(TRAIN, epochs=2)
        by_steps = grove.Trainer(TREEFC, **options)
        labelled = by_steps.read(TRAIN)
        for epoch in (1, 2):
            order = grove.shuffled_order(len(labelled), 9, epoch)
            losses = [by_steps.step(labelled[order[i:i + 2]]) for i in range(0, len(order), 2)]
        self.assertSameWeights(whole.weights(), by_steps.weights())
        self.assertSameWeights(whole.head(), by_steps.head())
        self.assertEqual(whole.state["steps"], by_steps.state["steps"])
        self.assertEqual([r["epoch"] for r in reports], [1, 2])
        self.assertTrue(all(np.isfinite(losses)))

    def test_save_and_resume_continue_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            options = dict(sizes="H=4", trees=[TRAIN], seed=2, batch=3)
            straight = grove.Trainer(TREEFC, **options)
            straight.train(TRAIN, DEV, epochs=2)
            first = grove.Trainer(TREEFC, **options)
            first.train(TRAIN, DEV, epochs=1)
            first.save(Path(tmp) / "ckpt.safetensors")
            second = grove.Trainer(TREEFC, **options)
            second.resume(Path(tmp) / "ckpt.safetensors")
            self.assertEqual(second.state["epoch"], 1)
            second.train(TRAIN, DEV, epochs=1)
            self.assertSameWeights(straight.weights(), second.weights())
            self.assertSameWeights(straight.head(), second.head())
            # grove.compile takes the checkpoint unchanged (its head and optimizer state skipped).
            compiled = grove.compile(TREEFC, weights=Path(tmp) / "ckpt.safetensors")
            self.assertEqual(compiled([(0, 1)]).shape, (1, 4))
            # Another optimizer's state is refused, and the trainer is left as it was.
            other = grove.Trainer(TREEFC, optimizer="sgd", **options)
            before = other.weights()
            self.assertGroveError("ckpt.safetensors", other.resume, Path(tmp) / "ckpt.safetensors")
            self.assertSameWeights(other.weights(), before)

    def test_same_as_grove_train(self):
        if not GROVE_BINARY or not Path(GROVE_BINARY).exists():
            self.skipTest("GROVE_BINARY (the grove program) is not set")
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            write_lines(tmp / "train.txt", TRAIN)
            write_lines(tmp / "dev.txt", DEV)
            args = ["--sizes", "H=4", "--epochs", "3", "--batch", "2", "--seed", "5", "--optimizer", "adam",
                    "--dropout", "0.25", "--weight-decay", "0.001"]
            run = subprocess.run([GROVE_BINARY, "train", str(TREEFC), "--trees", str(tmp / "train.txt"), "--dev",
                                  str(tmp / "dev.txt"), "--out", str(tmp / "cli"), "--quiet"] + args,
                                 capture_output=True, text=True, check=False)
            self.assertEqual(run.returncode, 0, run.stderr)
            seen = []
            reports = grove.train(TREEFC, tmp / "train.txt", tmp / "dev.txt", sizes="H=4", epochs=3, batch=2, seed=5,
                                  optimizer="adam", dropout=0.25, weight_decay=0.001, out=tmp / "py",
                                  on_epoch=seen.append)
            self.assertEqual(seen, list(reports))
            for name in ("last.safetensors", "best.safetensors"):
                self.assertEqual((tmp / "cli" / name).read_bytes(), (tmp / "py" / name).read_bytes(), name)
            lines = [line for line in run.stdout.splitlines() if line.startswith("epoch")]
            self.assertEqual(len(lines), 3)
            for line, report in zip(lines, reports):
                self.assertIn(f"train loss {report['train_loss']:.4f}", line)
                self.assertIn(f"dev root {100 * report['dev_root']:.2f}%", line)

    def test_a_short_run_loss_falls(self):
        vocab = SST / "vocab.txt"
        train = grove.read_labelled_trees(SST / "test.txt", vocab)[:120]
        self.assertEqual(len(train), 120)
        reports = grove.train(TREELSTM, train, train[:40], vocab=vocab, sizes="H=12,D=12", epochs=3, dropout=0.0,
                              average="trees", seed=1)
        losses = [r["train_loss"] for r in reports]
        self.assertEqual([r["epoch"] for r in reports], [1, 2, 3])
        self.assertLess(losses[2], losses[0])
        self.assertLess(losses[1], losses[0])
        accuracy = reports.trainer.evaluate(train[:40])
        self.assertEqual(accuracy["roots"], 40)
        self.assertAlmostEqual(accuracy["root"], reports[-1]["dev_root"])
        self.assertEqual(reports.trainer.params["emb"], (21702, 12))  # V: the vocabulary and <unk>


class TrainerErrors(GroveTestCase):
    @classmethod
    def setUpClass(cls):
        cls.trainer = grove.Trainer(TREEFC, sizes="H=4", trees=[TRAIN], dropout=0.0)

    def test_bad_options(self):
        def make(**options):
            return grove.Trainer(TREEFC, sizes="H=4,V=5", **options)

        self.assertGroveError("optimizer must be 'adagrad', 'adam' or 'sgd', got 'rmsprop'", make, optimizer="rmsprop")
        self.assertGroveError("dropout must be in [0, 1), got 1", make, dropout=1.0)
        self.assertGroveError("batch must be at least 1, got 0", make, batch=0)
        self.assertGroveError("lr must be a finite number >= 0", make, lr=float("nan"))
        self.assertGroveError("loss must be 'all'", make, loss="leaves")
        self.assertGroveError("average must be 'nodes'", make, average="batch")
        self.assertGroveError("classes must be at least 2", make, classes=1)

    def test_sizes(self):
        self.assertGroveError("the size V (the embedding's rows) is not known", grove.Trainer, TREEFC, sizes="H=4")
        self.assertGroveError("sizes: V = 3 but the trees' largest token id + 1 is 5", grove.Trainer, TREEFC,
                              sizes="H=4,V=3", trees=[TRAIN])
        self.assertGroveError("sizes apply to random initial weights only", grove.Trainer, TREEFC,
                              init=self.trainer.weights(), sizes="H=4")

    def test_bad_batches(self):
        self.assertGroveError("batch:1:", self.trainer.step, ["(7 (2 0) (2 1))"])  # label 7 of 5 classes
        self.assertGroveError("batch: no trees", self.trainer.step, [])
        self.assertGroveError("token", self.trainer.step, ["(1 (2 0) (2 99))"])  # token 99 of V = 5
        with self.assertRaises(TypeError):
            self.trainer.step([3])
        with self.assertRaises(TypeError):
            self.trainer.step(12)
        three = grove.read_labelled_trees(TRAIN, classes=3 + 2 + 1)
        self.assertGroveError("read for 6 classes, but the trainer has 5", self.trainer.step, three)
        self.assertEqual(self.trainer.state["steps"], 0)

    def test_an_on_epoch_error_keeps_the_epochs_done(self):
        trainer = grove.Trainer(TREEFC, sizes="H=4", trees=[TRAIN])

        def stop(report):
            raise KeyError("stop")

        with self.assertRaises(KeyError):
            trainer.train(TRAIN, DEV, epochs=3, on_epoch=stop)
        self.assertEqual(trainer.state["epoch"], 1)


if __name__ == "__main__":
    unittest.main()
