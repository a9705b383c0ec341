"""splicer: an HTTP/1.1 reverse proxy and load balancer that splices bodies kernel-to-kernel."""

__version__ = "0.1.0"
