"""The control plane: listeners, sessions, backends and workers; the socket work of a stream goes to
the engine as jobs (heads.py), with loop fallbacks (io.py, transfer.py, tunnel.py)."""
