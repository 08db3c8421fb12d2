"""Training from Python: a tree model's gradients, and the training driver of `grove train`.

    import grove
    model = grove.TrainableModel("models/treefc.grove", sizes="H=4,V=10")
    h = model.forward(["(3 (2 0) (4 1))"])          # every node's state, [nodes, H]
    grads = model.backward(numpy.ones_like(h))       # d(sum h)/d(every parameter)

    reports = grove.train("models/treelstm.grove", "train.txt", "dev.txt", vocab="vocab.txt",
                          sizes="H=150,D=300", epochs=3)    # one dict per epoch

    trainer = grove.Trainer("models/treefc.grove", sizes="H=4,V=10", dropout=0)
    for batch in batches:                             # a user's own loop
        loss = trainer.step(batch)                    # labelled PTB strings, or grove.LabelledTrees
    weights = trainer.weights()                       # NumPy arrays; trainer.save("ckpt.safetensors")

Everything is a function of the seed, the inputs and the options: the same seed gives bit-identical
weights, and the numbers are those `grove train` computes for the same options (docs/LIBRARY.md,
"Training from Python").
"""

import os

import numpy

from . import _grove

__all__ = ["TrainableModel", "Gradients", "Trainer", "LabelledTrees", "read_labelled_trees", "train",
           "shuffled_order"]

LabelledTrees = _grove.LabelledTrees
# shuffled_order(n, seed, epoch): the order of n training trees in epoch `epoch` (from 1) of a Trainer
# seeded `seed`, for a user's loop over step() that reproduces Trainer.train's batches.
shuffled_order = _grove.shuffled_order


def _path_or(value):
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _weights_or_path(weights):
    from . import _weights_to_numpy

    return _weights_to_numpy(_path_or(weights))


class Gradients(dict):
    """d(loss)/d(parameter) for every parameter but the embedding, by name (NumPy float32 arrays), and
    the embedding's sparse gradient: `embedding_rows` (the token ids the batch's leaves read,
    ascending, int32) and `embedding_grad` ([rows, D], row r the gradient of row embedding_rows[r]);
    every other row's gradient is exactly zero. `embedding` names the embedding parameter ("" if
    none)."""

    def __init__(self, dense, embedding, embedding_rows, embedding_grad):
        super().__init__(dense)
        self.embedding = embedding
        self.embedding_rows = embedding_rows
        self.embedding_grad = embedding_grad

    def embedding_dense(self, rows):
        """The embedding's gradient as a dense [rows, D] array (rows: the vocabulary size V)."""
        out = numpy.zeros((rows, self.embedding_grad.shape[1]), dtype=numpy.float32)
        out[self.embedding_rows] = self.embedding_grad
        return out

    def full(self, params):
        """Every parameter's gradient, the embedding dense; params: name -> shape (model.params)."""
        out = dict(self)
        if self.embedding:
            out[self.embedding] = self.embedding_dense(params[self.embedding][0])
        return out


class TrainableModel:
    """A tree model compiled for training (backends/cpu/TrainableModel.h): forward() keeps what the
    backward reads, backward() differentiates through the whole recursion.

    model: a .grove file. weights: a safetensors path (a `grove train` checkpoint works: its head and
      optimizer state are skipped) or a dict name -> array; without them, `sizes` ('H=4,V=10' or a
      dict) gives seeded random weights (those of `grove init-weights --seed seed`).
    schedule, threads, target: as grove.compile. vocab: a vocabulary (path or dict) for PTB strings.

    Thread-safe: calls from several threads run one at a time, with the GIL released.
    """

    def __init__(self, model, weights=None, *, sizes=None, seed=1, schedule=None, threads=None, target=None,
                 vocab=None):
        self._model = _grove.TrainableModel(os.fspath(model), weights=_weights_or_path(weights), sizes=sizes,
                                            seed=seed, schedule=schedule, threads=threads, target=target,
                                            vocab=_path_or(vocab))

    @property
    def params(self):
        """name -> shape of every parameter, in the model's declaration order."""
        return self._model.params

    @property
    def embedding(self):
        """The parameter a leaf's token indexes ('emb'), or '' if none."""
        return self._model.embedding

    @property
    def name(self):
        return self._model.name

    def set_weights(self, weights):
        """The weights of the next forward and backward: every parameter, exactly shaped (a dict of
        arrays, cast to float32, or a safetensors path). Copied: the arrays may change after."""
        self._model.set_weights(_weights_or_path(weights))

    def weights(self):
        """A copy of the current weights, name -> float32 array."""
        return self._model.weights()

    def forward(self, trees, *, vocab=None):
        """Every node's output state, [nodes, H] float32: tree by tree in input order, each tree's
        nodes in its own numbering (post-order for PTB strings and nested tuples; `tree_offset` says
        where each tree starts). Trees as grove.Model takes them."""
        return self._model.forward(trees, vocab=_path_or(vocab))

    @property
    def tree_offset(self):
        """trees + 1 offsets of the last forward's rows."""
        return self._model.tree_offset

    def backward(self, d_rows):
        """Given d(loss)/d(state) for every row of the last forward ([nodes, H]), every parameter's
        gradient (a Gradients dict)."""
        dense, rows, grad = self._model.backward(d_rows)
        return Gradients(dense, self.embedding, rows, grad)

    @property
    def stats(self):
        """Where the time went since the model was made (ms): inspector, forward, backward, ..."""
        return self._model.stats

    @property
    def backward_ilir(self):
        return self._model.backward_ilir

    @property
    def backward_plan(self):
        return self._model.backward_plan

    def __repr__(self):
        return f"<grove.TrainableModel {self.name}, params {list(self.params)}>"


def read_labelled_trees(source, vocab=None, classes=5):
    """Labelled PTB trees as `grove train` reads them: a file path (one tree per line) or a list of
    strings '(3 (2 It) (4 good))', every label a class in [0, classes); tokens looked up in `vocab`
    (a file, with `<unk>` appended when it has none), or integer ids without one. A LabelledTrees:
    len(), slicing and indexing by a list of indices (a batch)."""
    return _grove.read_labelled_trees(_path_or(source), vocab=_path_or(vocab), classes=classes)


def _sources(trees):
    """`trees=` of Trainer: one source (a path, a list of PTB strings, LabelledTrees) or a list of them."""
    one = isinstance(trees, (str, os.PathLike, LabelledTrees)) or (
        isinstance(trees, (list, tuple)) and len(trees) > 0 and isinstance(trees[0], str) and
        trees[0].lstrip().startswith("("))
    return [trees] if one else list(trees)


class Trainer:
    """The training driver of `grove train` (training/Trainer.h): the model's weights and a linear +
    softmax head trained on labelled trees by an optimizer, as PyTorch's torch.optim defines them.

    model: a .grove file. init: initial weights (a safetensors path or a dict; a `grove train`
      checkpoint's head is used too); else seeded random ones of `sizes`, V taken from `vocab` (its
      size with <unk>) or from `trees` (a source of labelled trees or a list of them: their largest
      token id + 1).
    The options are `grove train`'s, with its defaults: epochs 10, batch 25, optimizer adagrad|adam|sgd,
      lr (0.05; adam 0.001), emb_lr 0.1, emb_optimizer sgd|same, weight_decay 1e-4, dropout 0.5,
      clip 0 (none), loss all|root, average nodes|trees, seed 1, patience 0 (none), out (a directory
      for best.safetensors and last.safetensors after every epoch of train(); None: none written).

    step(batch) runs one optimizer step as one batch of an epoch does; train() runs epochs (the
    shuffle of epoch e from the seed); both advance the same state.
    """

    def __init__(self, model, init=None, *, sizes=None, vocab=None, classes=5, trees=None, epochs=10, batch=25,
                 optimizer="adagrad", lr=None, emb_lr=0.1, emb_optimizer="sgd", weight_decay=1e-4, dropout=0.5,
                 clip=0.0, loss="all", average="nodes", seed=1, patience=0, out=None, eval_batch=256,
                 schedule=None, threads=None, target=None):
        vocab = _path_or(vocab)
        if trees is not None:
            trees = [t if isinstance(t, LabelledTrees) else read_labelled_trees(t, vocab, classes)
                     for t in _sources(trees)]
        if out is not None:
            out = os.fspath(out)
            os.makedirs(out, exist_ok=True)
        self._trainer = _grove.Trainer(
            os.fspath(model), init=_weights_or_path(init), sizes=sizes, vocab=vocab, classes=classes, trees=trees,
            epochs=epochs, batch=batch, optimizer=optimizer, lr=lr, emb_lr=emb_lr, emb_optimizer=emb_optimizer,
            weight_decay=weight_decay, dropout=dropout, clip=clip, loss=loss, average=average, seed=seed,
            patience=patience, out=out, eval_batch=eval_batch, schedule=schedule, threads=threads, target=target)

    def read(self, source):
        """Labelled trees with this trainer's vocabulary and classes (a LabelledTrees)."""
        return self._trainer.read(_path_or(source))

    def step(self, batch):
        """One optimizer step on `batch` (labelled PTB strings, a file, or LabelledTrees): forward, the
        head's loss (dropout keyed by the step), backward, clip, decay, update. Returns the batch's
        loss before the update."""
        return self._trainer.step(_path_or(batch))

    def loss_and_grad(self, batch):
        """(loss, Gradients) on `batch` with the dropout mask the next step() uses; updates nothing.
        The gradients include the head's (head.weight, head.bias)."""
        loss, dense, rows, grad = self._trainer.loss_and_grad(_path_or(batch))
        return loss, Gradients(dense, self.embedding, rows, grad)

    def train(self, train, dev=None, *, epochs=None, on_epoch=None):
        """Epochs on `train`, evaluated on `dev` after each: `epochs` more, or up to the trainer's
        epochs in all (fewer with patience). Returns one dict per epoch: epoch, train_loss (mean
        cross-entropy per labelled node), dev_root, dev_binary, dev_all_nodes, sentences_per_s, best.
        on_epoch(report) is called after each."""
        return self._trainer.train(_path_or(train), _path_or(dev), epochs=epochs, on_epoch=on_epoch)

    def evaluate(self, trees):
        """Accuracies of the current weights (no dropout): root, binary, all_nodes and their counts."""
        return self._trainer.evaluate(_path_or(trees))

    def weights(self):
        """A copy of the model's weights, name -> float32 array (what grove.compile takes)."""
        return self._trainer.weights()

    def head(self):
        """A copy of the classifier head: head.weight [C, H], head.bias [C]."""
        return self._trainer.head()

    def save(self, path):
        """Writes a checkpoint as `grove train` does (weights, head, optimizer and trainer state),
        which grove.compile, `grove run --weights` and resume() take."""
        self._trainer.save(os.fspath(path))

    def resume(self, path):
        """Continues from a checkpoint of save() or `grove train` (the same optimizer)."""
        self._trainer.resume(os.fspath(path))

    @property
    def state(self):
        """epoch (epochs done), steps (optimizer steps), best_epoch, best_correct, bad_epochs."""
        return self._trainer.state

    @property
    def params(self):
        return self._trainer.params

    @property
    def embedding(self):
        return self._trainer.embedding

    @property
    def classes(self):
        return self._trainer.classes

    @property
    def width(self):
        """The states' size H (the head's input)."""
        return self._trainer.width

    def __repr__(self):
        return f"<grove.Trainer {self._trainer.name}, {self.state}>"


class TrainResult(list):
    """The per-epoch reports of grove.train (dicts), with the trainer that ran them (`.trainer`)."""

    def __init__(self, reports, trainer):
        super().__init__(reports)
        self.trainer = trainer


def train(model, train_trees, dev_trees=None, *, vocab=None, sizes=None, init=None, classes=5, on_epoch=None,
          **options):
    """Trains as `grove train MODEL --trees train_trees --dev dev_trees` does and returns the per-epoch
    reports (a list of dicts; `.trainer` holds the weights: .weights(), .save(path)). Trees: file paths,
    lists of labelled PTB strings, or LabelledTrees. The options are Trainer's (epochs, batch,
    optimizer, lr, emb_lr, emb_optimizer, weight_decay, dropout, clip, loss, average, seed, patience,
    out, schedule, threads, target)."""
    vocab = _path_or(vocab)
    train_set = (train_trees if isinstance(train_trees, LabelledTrees) else
                 read_labelled_trees(train_trees, vocab, classes))
    dev_set = None
    if dev_trees is not None:
        dev_set = dev_trees if isinstance(dev_trees, LabelledTrees) else read_labelled_trees(dev_trees, vocab, classes)
    sizing = [train_set] + ([dev_set] if dev_set is not None else [])
    trainer = Trainer(model, init, sizes=sizes, vocab=vocab, classes=classes, trees=sizing if init is None else None,
                      **options)
    return TrainResult(trainer.train(train_set, dev_set, on_epoch=on_epoch), trainer)
