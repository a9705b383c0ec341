"""Health checks, sans-I/O: the rise/fall machine (state.py) and what observed traffic tells it (observe.py); runtime/probes.py sends the probes that feed them."""
