"""The I/O shell: event loop, sockets and the splice engine, driven by the sans-I/O core."""
