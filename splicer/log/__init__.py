"""The access log (haproxy configuration.txt section 8): one line per stream, rendered from
a frozen LogRecord (record.py) with a log-format (format.py, escaping in escape.py), framed
for syslog (syslog.py) and written in batches by the Logger (logger.py) to its targets
(target.py). Only logger.py, target.py and collect.py touch the runtime or do I/O.
"""
