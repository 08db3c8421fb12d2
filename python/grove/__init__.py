"""grove: compiled recursive neural networks (TreeLSTM and friends) from Python.

    import grove
    model = grove.compile("models/treelstm.grove", weights=torch_module.state_dict())
    roots = model(["(3 (2 It) (4 good))"], vocab="datasets/sst/vocab.txt")   # NumPy [1, H]

`compile` JIT-compiles a model file for this CPU. Weights are a safetensors path or a dict of
arrays (NumPy arrays or PyTorch tensors, e.g. a `state_dict()`), named as docs/MODELS.md names them.
A model runs on trees (PTB strings, nested tuples, or parent/token arrays), sequences or DAGs and
returns float32 results without copying them: a NumPy array, or a PyTorch tensor (through DLPack)
when the inputs are torch tensors or `as_torch=True`. grove's errors raise `GroveError` (a
ValueError) with grove's message; arguments of the wrong Python type raise TypeError.

PyTorch is optional: it is imported only when torch tensors come in or `as_torch=True`.

`grove.relay` opens and runs whole Relay programs (and ONNX models): grove.relay.load(path)(*arrays).

Training (python/grove/training.py): grove.TrainableModel (forward and backward of a tree model),
grove.Trainer (the driver of `grove train`, epoch by epoch or step by step) and grove.train(...).
"""

import os
import warnings

import numpy

from . import _grove
from . import relay
from ._grove import GroveError
from .training import (Gradients, LabelledTrees, TrainableModel, Trainer, read_labelled_trees, shuffled_order,
                       train)

__all__ = ["compile", "Model", "GroveError", "relay", "TrainableModel", "Gradients", "Trainer", "LabelledTrees",
           "read_labelled_trees", "shuffled_order", "train"]

GroveError.__module__ = "grove"


def _is_torch_tensor(value):
    # No `import torch` here: a torch tensor's class lives in the torch package.
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")


def _to_numpy(value):
    """A torch tensor as a NumPy array (sharing memory when it is already on the CPU); else as is."""
    if _is_torch_tensor(value):
        return value.detach().cpu().numpy()
    return value


def _weights_to_numpy(weights):
    if isinstance(weights, dict) or (hasattr(weights, "items") and not isinstance(weights, (str, bytes))):
        return {name: _to_numpy(value) for name, value in weights.items()}
    return weights


def _pair_to_numpy(item):
    """A (parent, tokens) or (preds, tokens) pair with torch tensors, as NumPy; and whether it had any."""
    if isinstance(item, (tuple, list)) and len(item) == 2 and any(_is_torch_tensor(x) for x in item):
        return tuple(_to_numpy(x) for x in item), True
    if _is_torch_tensor(item):
        return _to_numpy(item), True
    return item, False


def _list_to_numpy(items):
    if not isinstance(items, (list, tuple)):
        return items, False
    converted = [_pair_to_numpy(item) for item in items]
    return [item for item, _ in converted], any(torch for _, torch in converted)


def _as_torch(result):
    """A _grove.DLPackTensor as a torch tensor over the same memory."""
    import torch.utils.dlpack

    return torch.utils.dlpack.from_dlpack(result)


class Model:
    """A compiled model. Call it on trees; `run_sequences` / `run_dags` for sequence and DAG models.

    Thread-safe: several threads may run one model at once (grove releases the GIL while it runs).
    """

    def __init__(self, compiled):
        if not isinstance(compiled, _grove.Model):
            raise TypeError("grove.Model is made by grove.compile(...)")
        self._model = compiled

    def __call__(self, trees=None, batch=0, *, vocab=None, parent=None, tokens=None, node_begin=None,
                 as_torch=None):
        """The root state of every tree, [trees, *output_shape], in input order.

        trees: a list of trees, each a PTB string '(3 (2 It) (4 good))' (tokens looked up in `vocab`,
          or integer ids without one), a nested tuple of token ids ((1, 2), 3) (an int is a leaf, a
          tuple an internal node with its children in order), or a (parent, tokens) pair of integer
          arrays: parent[i] is node i's parent (-1 for the root; a node's children are in increasing
          id order), tokens[i] a leaf's token id and -1 for an internal node.
        Or, instead of `trees`, one batch as flat arrays: `parent` (global node ids), `tokens` and
          `node_begin` (trees + 1 offsets: tree t is nodes node_begin[t] .. node_begin[t+1] - 1).
        batch: trees per call of the compiled code, 0 = all at once (results do not depend on it).
        vocab: a vocabulary file path or a dict token -> id, over the one given to compile().
        as_torch: return a torch tensor (no copy); by default, when the inputs are torch tensors.
        Errors number the trees from 1, as grove numbers the lines of a tree file ("tree 2").
        """
        if trees is not None and (parent is not None or tokens is not None or node_begin is not None):
            raise TypeError("give either trees or parent/tokens/node_begin, not both")
        if trees is None:
            if parent is None or tokens is None or node_begin is None:
                raise TypeError("give trees, or all of parent, tokens and node_begin")
            arrays = [_pair_to_numpy(a) for a in (parent, tokens, node_begin)]
            torch_in = any(t for _, t in arrays)
            result = self._model.run_tree_arrays(*(a for a, _ in arrays), batch=batch,
                                                 dlpack=_want_torch(as_torch, torch_in))
        else:
            trees, torch_in = _list_to_numpy(trees)
            result = self._model.run_trees(trees, batch=batch, vocab=_path_or(vocab),
                                           dlpack=_want_torch(as_torch, torch_in))
        return _finish(result)

    def run_sequences(self, sequences, batch=0, *, as_torch=None):
        """A sequence (or dag) model over sequences of token ids: the last state of each."""
        sequences, torch_in = _list_to_numpy(sequences)
        return _finish(self._model.run_sequences(sequences, batch=batch, dlpack=_want_torch(as_torch, torch_in)))

    def run_dags(self, dags, batch=0, *, outputs="sinks", as_torch=None):
        """A dag model over DAGs, each a (preds, tokens) pair: preds [nodes, slots] of predecessor
        ids (-1 for an empty slot), tokens [nodes]. The states of each DAG's sinks in node order (or
        of all its nodes, outputs="all_nodes"), DAG by DAG."""
        dags, torch_in = _list_to_numpy(dags)
        return _finish(self._model.run_dags(dags, batch=batch, outputs=outputs,
                                            dlpack=_want_torch(as_torch, torch_in)))

    def bind_weights(self, weights):
        """Replaces the weights (a safetensors path or a dict of arrays / a state_dict)."""
        self._model.bind_weights(_weights_to_numpy(_path_or(weights)))

    @property
    def params(self):
        """name -> shape of every weight the model takes."""
        return self._model.params

    @property
    def output_shape(self):
        """One tree's (node's) output, e.g. (H,)."""
        return self._model.output_shape

    @property
    def structure(self):
        """'binary_tree', 'tree', 'dag', 'sequence', ... (the model's structure line)"""
        return self._model.structure

    @property
    def schedule(self):
        """The schedule compiled in, KEY=VALUE pairs."""
        return self._model.schedule

    @property
    def name(self):
        return self._model.name

    @property
    def sizes(self):
        """The size variables (H, D, V, ...) the weights bound."""
        return self._model.sizes

    @property
    def compile_ms(self):
        return self._model.compile_ms

    @property
    def target(self):
        """'cuda' for a model on the GPU, else the Halide target it was compiled for."""
        return self._model.target

    def __repr__(self):
        return f"<grove.Model {self.name} ({self.structure}), output {self.output_shape}>"


def _want_torch(as_torch, torch_in):
    return bool(torch_in if as_torch is None else as_torch)


def _finish(result):
    return result if isinstance(result, numpy.ndarray) else _as_torch(result)


def _path_or(value):
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def compile(model, weights=None, *, sizes=None, schedule=None, threads=None, target=None, vocab=None, seed=1,
            cuda=None):
    """JIT-compiles the model file `model` (a .grove file) for this machine; returns a Model.

    weights: a safetensors path, or a dict name -> array (NumPy arrays, PyTorch tensors: a
      `state_dict()`), cast to float32. Without weights, `sizes` must bind every size variable and
      the model gets seeded random weights (those of `grove init-weights --seed seed`).
    sizes: 'H=256,D=256,V=100' or {'H': 256, ...}; with weights, checked against them.
    schedule: overrides over the default schedule, e.g. 'batch=on,unroll=2'; an option that cannot
      take effect with the rest (epilogue=on with batch=off, ...) gives a UserWarning saying why.
    threads: the thread pool's size (default: every hardware thread).
    target: a Halide target string (default: 'host'), or 'cuda': the model's CUDA kernels compiled
      by NVRTC and run on GPU 0 through the CUDA driver (libcuda.so.1, or $GROVE_CUDA_DRIVER), the
      weights copied there once; without a driver or a device, a GroveError says so.
    vocab: a vocabulary file path or a dict token -> id, for PTB strings given to the model.
    cuda: with target='cuda', the kernels' options as `grove run --cuda` takes them
      ('form=per_level,blocks=8,threads=128').
    """
    compiled = _grove.compile(os.fspath(model) if isinstance(model, os.PathLike) else model,
                              weights=_weights_to_numpy(_path_or(weights)), sizes=sizes, schedule=schedule,
                              threads=threads, target=target, vocab=_path_or(vocab), seed=seed, cuda=cuda)
    # A schedule option asked for that cannot take effect is a warning, as `grove run` prints a note.
    for note in compiled.notes:
        warnings.warn("grove: " + note, stacklevel=2)
    return Model(compiled)
