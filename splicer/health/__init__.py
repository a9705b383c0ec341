"""Health checks: a sans-I/O rise/fall machine (state.py) and the probes that feed it (probes.py)."""
