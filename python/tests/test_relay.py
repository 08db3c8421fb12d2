"""Tests of grove.relay (python/grove/relay.py, python/grove_module.cpp), run by ctest with the system
python3, PYTHONPATH at the build's python directory and GROVE_BINARY naming the `grove` program.

The MLP (models/relay/mlp.relay) with random weights is checked against NumPy in float64; the binary
TreeLSTM (models/relay/treelstm.relay) against `grove relay run` on the same inputs and against the
interpreter; two ONNX models against PyTorch's outputs; errors match grove's message text.
"""

import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import unittest
from pathlib import Path

import numpy as np

import grove
import grove.relay

SOURCE_DIR = Path(os.environ.get("GROVE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
RELAY = SOURCE_DIR / "models" / "relay"
FIXTURES = RELAY / "fixtures"
GROVE = os.environ.get("GROVE_BINARY")
TOLERANCE = 1e-5

try:
    import torch
except ImportError:
    torch = None


def read_safetensors(path):
    data = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    dtypes = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}
    arrays = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[8 + length + begin:8 + length + end]
        arrays[name] = np.frombuffer(raw, dtype=dtypes[info["dtype"]]).reshape(info["shape"]).copy()
    return arrays


def mlp_reference(x, w1, b1, w2, b2):
    x, w1, b1, w2, b2 = (np.asarray(a, dtype=np.float64) for a in (x, w1, b1, w2, b2))
    hidden = np.maximum(x @ w1.T + b1, 0.0)
    logits = hidden @ w2.T + b2
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def random_mlp(rng, rows):
    return [rng.standard_normal(shape).astype(np.float32)
            for shape in ((rows, 16), (32, 16), (32,), (10, 32), (10,))]


TREELSTM_PARAMS = ["emb", "W_iou", "U_iou", "b_iou", "U_f", "b_f"]


class Mlp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.program = grove.relay.load(RELAY / "mlp.relay", threads=2)

    def test_params_and_result_type(self):
        x = self.program.params[0]
        self.assertEqual((x.name, x.type, x.kind, x.dtype, x.shape),
                         ("x", "Tensor[(?, 16), float32]", "tensor", np.dtype("float32"), (None, 16)))
        self.assertEqual([p.name for p in self.program.params], ["x", "w1", "b1", "w2", "b2"])
        self.assertEqual(self.program.params[1].shape, (32, 16))
        self.assertEqual(self.program.result_type, "Tensor[(?, 10), float32]")
        self.assertIn("%x: Tensor[(?, 16), float32]", repr(self.program))

    def test_random_weights_match_numpy(self):
        rng = np.random.default_rng(7)
        for rows in (1, 5, 33):
            args = random_mlp(rng, rows)
            y = self.program(*args)
            self.assertIsInstance(y, np.ndarray)
            self.assertEqual((y.shape, y.dtype), ((rows, 10), np.float32))
            np.testing.assert_allclose(y, mlp_reference(*args), atol=TOLERANCE)
            (listed,) = self.program.run(*args)
            np.testing.assert_array_equal(listed, y)

    def test_interpreter_and_text_agree(self):
        args = random_mlp(np.random.default_rng(3), 4)
        interp = grove.relay.load(str(RELAY / "mlp.relay"), executor="interp")
        parsed = grove.relay.parse((RELAY / "mlp.relay").read_text(), threads=1)
        np.testing.assert_allclose(interp(*args), self.program(*args), atol=TOLERANCE)
        np.testing.assert_allclose(parsed(*args), self.program(*args), atol=TOLERANCE)

    def test_array_likes(self):
        args = random_mlp(np.random.default_rng(5), 2)
        want = self.program(*args)
        lists = [a.tolist() for a in args]  # converted to the parameters' float32
        np.testing.assert_array_equal(self.program(*lists), want)

        class ArrayLike:
            def __init__(self, a):
                self.a = a

            def __array__(self, dtype=None, copy=None):
                return self.a

        np.testing.assert_array_equal(self.program(*(ArrayLike(a) for a in args)), want)
        strided = np.asfortranarray(args[1])
        np.testing.assert_array_equal(self.program(args[0], strided, *args[2:]), want)

    @unittest.skipIf(torch is None, "PyTorch is not installed (python3-torch): `import torch` failed")
    def test_torch_tensors(self):
        args = random_mlp(np.random.default_rng(9), 3)
        np.testing.assert_array_equal(self.program(*(torch.from_numpy(a) for a in args)), self.program(*args))

    def test_targets(self):
        args = random_mlp(np.random.default_rng(13), 3)
        program = grove.relay.load(RELAY / "mlp.relay", targets=["dnnl"])
        np.testing.assert_allclose(program(*args), mlp_reference(*args), atol=TOLERANCE)

    @unittest.skipIf(GROVE is None, "GROVE_BINARY is not set: no `grove relay build` to save a program with")
    def test_saved_program(self):
        args = random_mlp(np.random.default_rng(17), 3)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "mlp.program")
            build = subprocess.run([GROVE, "relay", "build", str(RELAY / "mlp.relay"), "--target", "ccompiler",
                                    "--out", out], capture_output=True, text=True, timeout=300)
            self.assertEqual(build.returncode, 0, build.stdout + build.stderr)
            program = grove.relay.load(out, threads=1)
            np.testing.assert_allclose(program(*args), mlp_reference(*args), atol=TOLERANCE)
            with self.assertRaises(grove.GroveError) as raised:
                grove.relay.load(out, targets=["dnnl"])
            self.assertIn("a program grove relay build already partitioned", str(raised.exception))

    def test_concurrent_calls(self):
        rng = np.random.default_rng(11)
        inputs = [random_mlp(rng, 3 + i) for i in range(4)]
        results, errors = [None] * 4, []

        def work(i):
            try:
                for _ in range(5):
                    results[i] = self.program(*inputs[i])
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i in range(4):
            np.testing.assert_allclose(results[i], mlp_reference(*inputs[i]), atol=TOLERANCE)


class TreeLstm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.weights = read_safetensors(FIXTURES / "treelstm.safetensors")
        cls.trees = (FIXTURES / "treelstm_trees.txt").read_text().splitlines()
        cls.args = [cls.weights[name] for name in TREELSTM_PARAMS]

    def test_trees_parameter(self):
        program = grove.relay.load(RELAY / "treelstm.relay")
        self.assertEqual(program.params[0][:3], ("trees", "List[Tree[int32]]", "trees"))
        self.assertEqual([p.name for p in program.tensor_params], TREELSTM_PARAMS)

    def test_matches_the_fixture_and_the_interpreter(self):
        vm = grove.relay.load(RELAY / "treelstm.relay", threads=1)(*self.args, trees=self.trees)
        interp = grove.relay.load(RELAY / "treelstm.relay", executor="interp")(*self.args, trees=self.trees)
        self.assertEqual(len(vm), len(self.trees))
        np.testing.assert_allclose(np.concatenate(vm), self.weights["expected"], atol=TOLERANCE)
        np.testing.assert_allclose(np.concatenate(vm), np.concatenate(interp), atol=TOLERANCE)
        # One str with a tree per line is the same batch.
        joined = grove.relay.load(RELAY / "treelstm.relay")(*self.args, trees="\n".join(self.trees))
        np.testing.assert_allclose(np.concatenate(joined), np.concatenate(vm), atol=TOLERANCE)

    def test_vocabulary(self):
        with tempfile.TemporaryDirectory() as tmp:
            vocab = Path(tmp) / "vocab.txt"
            vocab.write_text("".join(f"w{i}\n" for i in range(20)))
            words = grove.relay.load(RELAY / "treelstm.relay", vocab=vocab)(*self.args, trees=["(0 (0 w3) (0 w17))"])
        ids = grove.relay.load(RELAY / "treelstm.relay")(*self.args, trees=["(0 (0 3) (0 17))"])
        np.testing.assert_array_equal(words[0], ids[0])

    @unittest.skipIf(GROVE is None, "GROVE_BINARY is not set: no `grove` program to compare with")
    def test_matches_grove_relay_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            command = [GROVE, "relay", "run", str(RELAY / "treelstm.relay"), "--trees",
                       str(FIXTURES / "treelstm_trees.txt"), "--threads", "2", "--out", os.path.join(tmp, "out")]
            for name in TREELSTM_PARAMS:
                np.save(os.path.join(tmp, name + ".npy"), self.weights[name])
                command += ["--arg", f"{name}={os.path.join(tmp, name + '.npy')}"]
            run = subprocess.run(command, capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            cli = [np.load(os.path.join(tmp, "out", f"{i}.npy")) for i in range(len(self.trees))]
        ours = grove.relay.load(RELAY / "treelstm.relay", threads=2)(*self.args, trees=self.trees)
        for a, b in zip(ours, cli):
            np.testing.assert_array_equal(a, b)


class Lstm(unittest.TestCase):
    def test_steps_as_one_array_or_a_list(self):
        f = read_safetensors(FIXTURES / "lstm.safetensors")
        program = grove.relay.load(RELAY / "lstm.relay")
        xs = program.params[0]
        self.assertEqual((xs.kind, xs.shape, xs.dtype), ("tensor_list", (None, 1, None), np.dtype("float32")))
        rest = [f[p.name] for p in program.params[1:]]
        np.testing.assert_allclose(program(f["xs"], *rest), f["expected"], atol=TOLERANCE)
        steps = [step for step in f["xs"]]  # six arrays [1, 8]
        np.testing.assert_allclose(program(steps, *rest), f["expected"], atol=TOLERANCE)
        with self.assertRaises(grove.GroveError) as raised:
            program(f["xs"][0], *rest)
        self.assertIn("argument %xs of @main: expected List[Tensor[(1, ?), float32]], given as one tensor",
                      str(raised.exception))


class Onnx(unittest.TestCase):
    def test_models_match_pytorch(self):
        """ONNX models exported by PyTorch (tests/frontend/onnx/fixtures), against PyTorch's outputs."""
        fixtures = SOURCE_DIR / "tests" / "frontend" / "onnx" / "fixtures"
        for name in ("mlp", "lstm"):
            program = grove.relay.load(fixtures / f"{name}.onnx", threads=1)
            self.assertEqual([p.name for p in program.params], ["input"])
            out = program(np.load(fixtures / f"{name}.input.npy"))
            np.testing.assert_allclose(out, np.load(fixtures / f"{name}.output.npy"), atol=1e-4, err_msg=name)


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mlp = grove.relay.load(RELAY / "mlp.relay")
        cls.args = random_mlp(np.random.default_rng(1), 2)

    def assert_grove_error(self, text, call, *args, **kwargs):
        with self.assertRaises(grove.GroveError) as raised:
            call(*args, **kwargs)
        self.assertIn(text, str(raised.exception))
        return str(raised.exception)

    def test_wrong_count(self):
        self.assert_grove_error(f"{RELAY / 'mlp.relay'}: @main takes 5 tensors (%x, %w1, %b1, %w2, %b2); got 4",
                                self.mlp, *self.args[:4])

    def test_wrong_shape_and_dtype(self):
        message = self.assert_grove_error("argument %x of @main: expected Tensor[(?, 16), float32]", self.mlp,
                                          np.zeros((2, 15), np.float32), *self.args[1:])
        self.assertIn("(2, 15)", message)
        message = self.assert_grove_error("argument %b1 of @main: expected Tensor[(32), float32]", self.mlp,
                                          *self.args[:2], self.args[2].astype(np.float64), *self.args[3:])
        self.assertIn("float64", message)
        self.assert_grove_error("argument %x: dtype complex64 is not one grove's Relay programs take", self.mlp,
                                np.zeros((2, 16), np.complex64), *self.args[1:])

    def test_trees_where_none_are_taken(self):
        self.assert_grove_error("trees were given, but @main has no parameter of type List[Tree[int32]]",
                                self.mlp, *self.args, trees=["(0 1)"])

    def test_missing_and_bad_trees(self):
        weights = read_safetensors(FIXTURES / "treelstm.safetensors")
        program = grove.relay.load(RELAY / "treelstm.relay")
        args = [weights[name] for name in TREELSTM_PARAMS]
        self.assert_grove_error("@main's parameter %trees: List[Tree[int32]] takes trees, and none were given",
                                program, *args)
        self.assert_grove_error("trees:2:", program, *args, trees=["(0 1)", "(0 (0 1)"])
        with self.assertRaises(TypeError):
            program(*args, trees=[3])

    def test_missing_file_and_malformed_text(self):
        self.assert_grove_error("/nonexistent/model.relay", grove.relay.load, "/nonexistent/model.relay")
        self.assert_grove_error("bad.relay:4:1: error: expected an expression", grove.relay.parse,
                                '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  add(%x,\n}\n',
                                name="bad.relay")

    def test_bad_options(self):
        self.assert_grove_error("executor='fast': grove.relay knows executor='vm'", grove.relay.load,
                                RELAY / "mlp.relay", executor="fast")
        self.assert_grove_error("threads must be at least 1, got 0", grove.relay.load, RELAY / "mlp.relay",
                                threads=0)
        self.assert_grove_error("no-such-target", grove.relay.load, RELAY / "mlp.relay", targets=["no-such-target"])


if __name__ == "__main__":
    unittest.main()
