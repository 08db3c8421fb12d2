"""grove.relay: whole models written in Relay (docs/RELAY.md), run as `grove relay run` runs them.

    import grove.relay
    mlp = grove.relay.load("models/relay/mlp.relay", threads=4)
    mlp.params                 # [Param(name='x', type='Tensor[(?, 16), float32]', kind='tensor', ...), ...]
    y = mlp(x, w1, b1, w2, b2)                                          # NumPy [N, 10]
    tree = grove.relay.load("models/relay/treelstm.relay")
    roots = tree(emb, W_iou, U_iou, b_iou, U_f, b_f, trees=["(0 (0 3) (0 4))"])   # a list of [1, H]

`load` opens Relay text (its constants in FILE.meta.safetensors or a #[metadata] section), an ONNX
model, or a directory written by `grove relay build`; `parse` takes Relay text. The program runs on
grove's VM (Halide kernels, grove's recursive compiler for recursive functions over trees) or, with
executor="interp", on the reference interpreter; `targets` partitions it for BYOC code generators as
`grove relay run --target` does.

Arguments are positional, one per parameter of @main in order, except the parameter of type
List[Tree[int32]] or List[Rose[int32]] (kind 'trees'), which takes `trees=`: PTB strings, one tree
each (or one str with a tree per line), their words looked up in `vocab` or integer ids without one.
A parameter of type List[Tensor[S]] (kind 'tensor_list') takes one array of shape (N, S...), or a list
of N arrays of shape S: the list's elements.
An argument is anything NumPy takes (an array, a PyTorch tensor, an object with __array__ or
__dlpack__, a nested list: converted to the parameter's dtype); an array's dtype is kept, and one that
is not the parameter's is an error. grove's errors (a wrong count, dtype or shape, naming the
parameter and its type) raise grove.GroveError with grove's message.

Several threads may call one program: runs on the VM take turns (grove releases the GIL meanwhile).
"""

import os
from typing import NamedTuple, Optional, Tuple

import numpy

from . import _grove

__all__ = ["load", "parse", "Program", "Param"]


class Param(NamedTuple):
    """A parameter of @main. dtype and shape for a tensor (None for a `?` dimension), else None; for a
    list of tensors (kind 'tensor_list'), those of the one tensor that stacks its elements."""

    name: str
    type: str
    kind: str  # 'tensor', 'tensor_list', 'trees' or 'other'
    dtype: Optional[numpy.dtype]
    shape: Optional[Tuple[Optional[int], ...]]


def _is_torch_tensor(value):
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")


def _as_array(value, param):
    """`value` as a C-ordered NumPy array: a torch tensor through NumPy, a DLPack-only object through
    numpy.from_dlpack, an array as it is (its dtype kept), anything else converted to the dtype of the
    tensor parameter it is given for."""
    if _is_torch_tensor(value):
        value = value.detach().cpu().numpy()
    elif not hasattr(value, "__array__") and hasattr(value, "__dlpack__"):
        value = numpy.from_dlpack(value)
    if isinstance(value, numpy.ndarray) or hasattr(value, "__array__"):
        return numpy.ascontiguousarray(value)
    dtype = param.dtype if param is not None and param.kind in ("tensor", "tensor_list") else None
    return numpy.ascontiguousarray(numpy.asarray(value, dtype=dtype))


class Program:
    """An opened Relay program; call it with @main's tensors (and trees=) to run it."""

    def __init__(self, program, name):
        if not isinstance(program, _grove.RelayProgram):
            raise TypeError("grove.relay.Program is made by grove.relay.load(...) or grove.relay.parse(...)")
        self._program = program
        self.name = name
        self.params = [Param(n, t, k, None if d is None else numpy.dtype(d), s) for n, t, k, d, s in program.params]

    @property
    def result_type(self):
        """@main's result type as Relay text, e.g. 'Tensor[(?, 10), float32]'."""
        return self._program.result_type

    @property
    def tensor_params(self):
        """The parameters the positional arguments bind to, in order (all but the trees)."""
        return [p for p in self.params if p.kind != "trees"]

    def run(self, *arrays, trees=None):
        """Runs @main; returns the result's tensors, flattened in order, as a list of NumPy arrays."""
        params = self.tensor_params
        converted = [_as_array(a, params[i] if i < len(params) else None) for i, a in enumerate(arrays)]
        if isinstance(trees, os.PathLike):
            raise TypeError("trees: give PTB strings (read the file yourself), not a path")
        if trees is not None and not isinstance(trees, str):
            trees = list(trees)
        return self._program.run(converted, trees)

    def __call__(self, *arrays, trees=None):
        """As run(), but a program whose result is one tensor returns that array alone."""
        result = self.run(*arrays, trees=trees)
        return result[0] if self.result_type.startswith("Tensor[") and len(result) == 1 else result

    def __repr__(self):
        params = ", ".join(f"%{p.name}: {p.type}" for p in self.params)
        return f"<grove.relay.Program {self.name} ({params}) -> {self.result_type}>"


def _options(threads, executor, targets, vocab):
    if isinstance(targets, str):
        targets = [targets]
    return dict(threads=threads, executor=executor, targets=list(targets),
                vocab=os.fspath(vocab) if vocab is not None else None)


def load(path, threads=None, executor="vm", targets=(), *, vocab=None):
    """Opens a Relay program file (.relay), an ONNX model (.onnx) or a `grove relay build` directory.

    threads: the VM's kernel pool and grove's recursive functions (default: every core).
    executor: 'vm' (compiled) or 'interp' (the reference interpreter, on the calling thread).
    targets: BYOC code generators to partition for, e.g. ['dnnl'] (see `grove relay targets`).
    vocab: a vocabulary file for the words of PTB trees.
    """
    path = os.fspath(path)
    return Program(_grove.relay_load(path, **_options(threads, executor, targets, vocab)), path)


def parse(text, threads=None, executor="vm", targets=(), *, name="<text>", vocab=None):
    """The same for Relay text in memory (constants, if any, in a #[metadata] section)."""
    return Program(_grove.relay_parse(text, name=name, **_options(threads, executor, targets, vocab)), name)
