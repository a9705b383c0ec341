"""The native engine as Python sees it: jobs and completions, pools, pipes and pump results, no cdata."""
