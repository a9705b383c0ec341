"""The runtime API (haproxy's stats socket), sans-I/O: the line protocol, the commands and
their access levels, and the text every command answers with.

Rule: nothing in this package does I/O or reads the clock; times come in as arguments. The
master serves the socket (runtime/master.py hook, runtime/adminsock.py), the workers run
the commands on their runtime objects (runtime/command.py); both only call in here to
parse and to render.
"""
