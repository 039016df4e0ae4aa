"""The split sizes the synthetic sequence tasks default to: ``n_train``, ``n_valid``, ``n_test``.

Each task spells the parameters in its own signature, since ``components/declared.py`` reads a
signature from source; their defaults are these names, so changing one changes every task. This
module imports nothing: reading a default imports it, and ``bottlenecks check`` stays without torch.
"""

N_TRAIN = 5000
N_VALID = 500
N_TEST = 1000
