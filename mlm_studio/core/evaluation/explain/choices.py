"""What an explanation can be asked for, without PyTorch (the command line's choices and the window's)."""

METHODS = {  # name: (what it is called, the unit of its scores)
    "ig": ("integrated gradients", "logit"),
    "gradxinput": ("gradient × input", "logit"),
    "occlusion": ("leave-one-word-out occlusion", "probability"),
}
DEFAULT_METHOD = "ig"
# Gauss–Legendre nodes: 16 already kept completeness within 1% on every mask measured (docs/performance.md); twice
# that leaves a margin for models less smooth than those. Captum's default is 50.
DEFAULT_STEPS = 32
MAX_STEPS = 1024
BASELINES = ("mask", "pad")  # every word's pieces replaced by the mask token, or by padding
