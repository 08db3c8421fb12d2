#!/usr/bin/python3
"""Tests of pytorch_seq.py: nn.LSTM/nn.GRU over packed calls against the checked-in PyTorch fixtures,
the wavefront DAG-RNN against a cell-by-cell loop, and input errors.

  /usr/bin/python3 experiments/peers/test_pytorch_seq.py
"""

import os
import sys
import tempfile
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402
import pytorch_seq as ps  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures")


def all_outputs(runner, batch):
    outputs = []
    with torch.no_grad():
        ps.run_pass(runner, batch, outputs)
    return torch.cat(outputs).numpy()


class SequenceTest(unittest.TestCase):
    def test_packed_calls_match_the_fixtures_one_sequence_at_a_time(self):
        # The fixtures run each sequence alone; packed calls of 3 mix lengths 1..60 in one call.
        sequences = ps.read_sequences(os.path.join(FIXTURES, "sequences.txt"))
        for model in ("lstm", "gru"):
            w, hidden = ps.load_weights(os.path.join(FIXTURES, f"{model}.safetensors"), model, 0)
            expected = np.load(os.path.join(FIXTURES, f"{model}_expected.npy"))
            for batch_first in (False, True):
                for batch in (1, 3, 8):
                    runner = ps.SequenceRunner(model, w, hidden, sequences, batch_first)
                    got = all_outputs(runner, batch)
                    np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=f"{model} B{batch}")


def naive_dagrnn(w, grids):
    """One cell at a time, row-major: h(r, c) = tanh(U x + W_0 h(r-1, c) + W_1 h(r, c-1) + b)."""
    H = w["W_0"].shape[0]
    sinks = []
    for R, C, tokens in grids:
        h = [[torch.zeros(H) for _ in range(C)] for _ in range(R)]
        for r in range(R):
            for c in range(C):
                up = h[r - 1][c] if r > 0 else torch.zeros(H)
                left = h[r][c - 1] if c > 0 else torch.zeros(H)
                x = w["emb"][tokens[r * C + c]]
                h[r][c] = torch.tanh(w["U"] @ x + w["W_0"] @ up + w["W_1"] @ left + w["b"])
        sinks.append(h[R - 1][C - 1])
    return torch.stack(sinks).numpy()


class GridTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(3)
        H, V = 8, 20
        # Small weights keep tanh away from saturation, so a wrong neighbour shows in the sink.
        self.w = {"emb": rng.uniform(-1, 1, (V, H)), "U": rng.uniform(-0.4, 0.4, (H, H)),
                  "W_0": rng.uniform(-0.4, 0.4, (H, H)), "W_1": rng.uniform(-0.4, 0.4, (H, H)),
                  "b": rng.uniform(-0.1, 0.1, H)}
        self.w = {k: torch.from_numpy(v.astype(np.float32)) for k, v in self.w.items()}
        shapes = [(3, 4), (1, 5), (4, 1), (2, 2), (5, 3)]
        self.grids = [(R, C, torch.from_numpy(rng.integers(0, V, R * C))) for R, C in shapes]

    def test_wavefronts_over_grids_of_different_shapes_match_a_cell_by_cell_loop(self):
        expected = naive_dagrnn(self.w, self.grids)
        for batch in (1, 2, 5):
            got = all_outputs(ps.GridRunner(self.w, 8, self.grids), batch)
            np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=f"B{batch}")

    def test_swapped_predecessor_weights_change_the_result(self):
        swapped = dict(self.w, W_0=self.w["W_1"], W_1=self.w["W_0"])
        got = all_outputs(ps.GridRunner(swapped, 8, self.grids), 5)
        self.assertGreater(np.abs(got - naive_dagrnn(self.w, self.grids)).max(), 1e-3)


class InputErrorTest(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_grid_with_the_wrong_token_count(self):
        path = self.write("2 2 1 2 3 4\n2 3 1 2 3\n")
        with self.assertRaisesRegex(pc.InputError, r"grid 1: expected 'R C' .* got 5 numbers"):
            ps.read_grids(path)

    def test_non_integer_token(self):
        path = self.write("1 2 x 3\n")
        with self.assertRaisesRegex(pc.InputError, r":1: expected integer token ids"):
            ps.read_sequences(path)

    def test_token_beyond_the_embedding(self):
        with self.assertRaisesRegex(pc.InputError, r"'emb' has 30 rows but the inputs use token id 30"):
            ps.load_weights(os.path.join(FIXTURES, "lstm.safetensors"), "lstm", 30)

    def test_weights_of_the_wrong_model(self):
        with self.assertRaisesRegex(pc.InputError, r"missing tensor 'W_0' for model dagrnn"):
            ps.load_weights(os.path.join(FIXTURES, "gru.safetensors"), "dagrnn", 0)


if __name__ == "__main__":
    unittest.main()
