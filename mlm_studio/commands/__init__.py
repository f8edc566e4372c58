"""The command line, one module per command (`train.py` is `mlm-studio train`), each with a `run(args)`: it
parses nothing (`parser.py` does), calls the engine's one road for its job and prints. `terminal.py` holds what
every command does alike; `refusals.py` the errors a command reports in one sentence."""
