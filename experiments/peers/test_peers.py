#!/usr/bin/python3
"""Tests of the Python peers' input handling, FLOP counts and eager/batched agreement.

  /usr/bin/python3 experiments/peers/test_peers.py
"""

import os
import sys
import tempfile
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flops  # noqa: E402
import peer_common as pc  # noqa: E402
import pytorch_tree as pt  # noqa: E402


class ParsingTest(unittest.TestCase):
    def test_no_break_space_stays_inside_a_word(self):
        tree = pc.parse_tree("(3 (2 8\u00a01\\/2) (2 stars))", "t")
        self.assertEqual(tree.token, ["8\u00a01\\/2", "stars", None])

    def test_post_order_and_heights(self):
        tree = pc.parse_tree("(3 (2 It) (4 (2 's) (4 good)))", "t")
        self.assertEqual(tree.token, ["It", "'s", "good", None, None])
        self.assertEqual(tree.children, [[], [], [], [1, 2], [0, 3]])
        self.assertEqual(tree.heights(), [0, 0, 0, 1, 2])

    def test_unbalanced_tree_names_the_place(self):
        with self.assertRaisesRegex(pc.InputError, r"f:7: unbalanced '\(': the tree is not closed"):
            pc.parse_tree("(3 (2 a) (2 b)", "f:7")

    def test_word_next_to_children_is_an_error(self):
        with self.assertRaisesRegex(pc.InputError, "word 'x' next to other children"):
            pc.parse_tree("(3 (2 a) x)", "f:1")

    def test_unknown_token_without_unk(self):
        trees = [pc.parse_tree("(3 (2 a) (2 zebra))", "f:1")]
        with self.assertRaisesRegex(pc.InputError, "tree 0, node 1: token 'zebra' is not in the vocabulary"):
            pc.resolve_tokens(trees, {"a": 0}, "f")

    def test_unknown_token_maps_to_unk(self):
        trees = [pc.parse_tree("(3 (2 a) (2 zebra))", "f:1")]
        pc.resolve_tokens(trees, {"a": 0, "<unk>": 5}, "f")
        self.assertEqual(trees[0].token, [0, 5, -1])

    def test_compaction_keeps_id_order(self):
        trees = [pc.parse_tree("(1 (2 c) (2 a))", "f:1")]
        pc.resolve_tokens(trees, {"a": 10, "c": 30}, "f")
        self.assertEqual(pc.compact_tokens(trees), 2)
        self.assertEqual(trees[0].token, [1, 0, -1])


class WeightsTest(unittest.TestCase):
    def test_safetensors_round_trip(self):
        w = pc.random_weights("treelstm", 8, 5, seed=3)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "w.safetensors")
            pc.write_safetensors(path, w)
            back = pc.read_safetensors(path)
        self.assertEqual(sorted(back), sorted(w))
        for name in w:
            np.testing.assert_array_equal(back[name], w[name])

    def test_misshapen_tensor_names_both_shapes(self):
        w = pc.random_weights("treefc", 8, 5, seed=3)
        w["W"] = np.zeros((8, 8), np.float32)
        with self.assertRaisesRegex(pc.InputError, r"w.st: tensor 'W' has shape \[8, 8\], expected \[8, 16\]"):
            pc.check_weights(w, "treefc", 8, 5, "w.st")

    def test_missing_tensor(self):
        w = pc.random_weights("treegru", 8, 5, seed=3)
        del w["U_r"]
        with self.assertRaisesRegex(pc.InputError, r"missing tensor 'U_r', expected shape \[16, 16\]"):
            pc.check_weights(w, "treegru", 8, 5, "w.st")


class FlopsTest(unittest.TestCase):
    def test_three_node_tree(self):
        tree = pc.parse_tree("(1 (2 a) (2 b))", "t")
        H = 4
        self.assertEqual(flops.tree_flops("treelstm", H, tree), 2 * 6 * H * H + 20 * H * H)
        self.assertEqual(flops.tree_flops("treefc", H, tree), 4 * H * H)
        self.assertEqual(flops.tree_flops("mvrnn", H, tree), 8 * H * H + 4 * H ** 3)
        self.assertEqual(flops.tree_flops("childsumtreelstm", H, tree), 2 * 6 * H * H + 6 * H * H + 2 * 2 * H * H)


class AgreementTest(unittest.TestCase):
    """Eager (per node, nn modules) and level-batched runs of each model give the same roots."""

    def check(self, model, trees, hidden=16):
        w_np = pc.random_weights(model, hidden, pc.compact_tokens(trees), seed=7)
        w = {k: torch.from_numpy(v) for k, v in w_np.items()}
        with torch.no_grad():
            eager = pt.EagerRunner(model, w, trees).call(0, len(trees))
            batched = pt.BatchedRunner(model, w, trees).call(0, len(trees))
        self.assertEqual(tuple(batched.shape), (len(trees), hidden))
        self.assertLess(float((eager - batched).abs().max()), 1e-5)
        self.assertGreater(float(eager.abs().max()), 1e-3)  # not trivially zero

    def test_binary_models_on_mixed_trees(self):
        lines = ["(3 (2 It) (4 (2 's) (4 good)))", "(1 (2 a) (2 b))", "(2 (2 (2 a) (2 c)) (2 (2 d) (2 b)))"]
        for model in ("treefc", "treegru", "treelstm", "childsumtreelstm", "mvrnn"):
            with self.subTest(model=model):
                trees = [pc.parse_tree(line, "t") for line in lines]
                pc.resolve_tokens(trees, pc.vocab_from_trees(trees), "t")
                self.check(model, trees)

    def test_child_sum_on_a_ternary_tree(self):
        trees = [pc.parse_tree("(0 (1 a) (1 b) (1 (2 c) (2 d) (2 e) (2 f)))", "t")]
        pc.resolve_tokens(trees, pc.vocab_from_trees(trees), "t")
        self.check("childsumtreelstm", trees)

    def test_perfect_trees(self):
        self.check("treelstm", pc.perfect_trees(4, 3))

    def test_bf16_products_stay_near_fp32(self):
        """--precision bf16 (bf16 weights and product inputs, fp32 states) against the fp32 run: within
        1e-2 of the largest root value, and not equal to it (the products really ran in bf16)."""
        lines = ["(3 (2 It) (4 (2 's) (4 good)))", "(2 (2 (2 a) (2 c)) (2 (2 d) (2 b)))"]
        for model in ("treefc", "treegru", "treelstm", "childsumtreelstm", "mvrnn"):
            with self.subTest(model=model):
                trees = [pc.parse_tree(line, "t") for line in lines]
                pc.resolve_tokens(trees, pc.vocab_from_trees(trees), "t")
                w_np = pc.random_weights(model, 32, pc.compact_tokens(trees), seed=7)
                w = {k: torch.from_numpy(v) for k, v in w_np.items()}
                with torch.no_grad():
                    fp32 = pt.BatchedRunner(model, w, trees).call(0, len(trees))
                    bf16 = pt.BatchedRunner(model, w, trees, "bf16").call(0, len(trees))
                self.assertEqual(bf16.dtype, torch.float32)
                difference = float((fp32 - bf16).abs().max())
                self.assertLess(difference, 1e-2 * float(fp32.abs().max()))
                self.assertGreater(difference, 0.0)


if __name__ == "__main__":
    unittest.main()
