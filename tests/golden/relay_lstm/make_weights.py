# Writes the files of tests/golden/relay_lstm.ilir.test: zeros whose shapes (D=4, H=3) are all
# `grove relay dump --stage ilir` reads; xs.npy is one step [1, D] of the list. Run from this
# directory: python3 make_weights.py
import numpy as np

D, H = 4, 3
shapes = {"w_ih": (4 * H, D), "w_hh": (4 * H, H), "b_ih": (4 * H,), "b_hh": (4 * H,), "xs": (1, D)}
for name, shape in shapes.items():
    np.save(name + ".npy", np.zeros(shape, dtype=np.float32))
