# Writes the weight files of tests/golden/relay_childsum_treelstm.ilir.test: zeros whose shapes (V=10,
# D=4, H=3) are all `grove relay dump --stage ilir` reads. Run from this directory: python3 make_weights.py
import numpy as np

V, D, H = 10, 4, 3
shapes = {"emb": (V, D), "W_iou": (3 * H, D), "U_iou": (3 * H, H), "b_iou": (3 * H,), "W_f": (H, D),
          "U_f": (H, H), "b_f": (H,)}
for name, shape in shapes.items():
    np.save(name + ".npy", np.zeros(shape, dtype=np.float32))
