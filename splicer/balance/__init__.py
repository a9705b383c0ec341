"""Server selection algorithms (haproxy `balance`): pure decisions, no I/O, no clock."""
from splicer.balance.base import Balancer  # noqa: F401
from splicer.balance.leastconn import LeastConn
from splicer.balance.roundrobin import RoundRobin

ALGORITHMS = {"roundrobin": RoundRobin, "leastconn": LeastConn}
"""`balance` keyword value -> Balancer class."""
