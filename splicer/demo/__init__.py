"""Demo and test peers: a small origin server and the one-command demo of the README."""
