"""Configuration text the unit tests share."""

HTTP_DEFAULTS = """global
    nbthread 1
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
"""
"""A global and a defaults section of mode http with every timeout set: what a test's own
sections follow."""
