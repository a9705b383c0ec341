"""The native splice engine as Python sees it: pools, pipes and pump results, no cdata."""
