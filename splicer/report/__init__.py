"""Renderers of the operator's view: Proxy.stats() dicts in, CSV, HTML and Prometheus text
out. Rule: pure functions of the stats dict (and of the options passed); no I/O, no clock."""
