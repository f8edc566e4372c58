"""What fine-tuning predicts, and how a classifier may read a text (torch-free: the command line's choices)."""

from mlm_studio.core.runs.task_spec import POOLING_KINDS, TASK_KINDS

TASKS, POOLINGS = TASK_KINDS, POOLING_KINDS  # the kinds of task and the poolings a run's task.json may name
# auto: bf16 where the device computes it natively, else fp32 (no fp16: fine-tuning does no loss scaling)
FINETUNE_PRECISIONS = ("auto", "fp32", "bf16")
MAX_SEEDS = 100  # the most seeds a comparison or a search runs each model or candidate with
COMPARE_SEEDS = 3  # seeds per model a comparison fine-tunes unless told: the fewest that give a spread
# a recipe search unless told: learning rates a factor of about 3 apart around the measured defaults, the most
# epochs a run trains (early stopping ends it sooner), and seeds: the fewest that give the better half a spread
SEARCH_RATES, SEARCH_MAX_EPOCHS, SEARCH_SEEDS = (1e-5, 3e-5, 1e-4, 3e-4), 10, 2
