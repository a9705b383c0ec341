"""Sans-I/O HTTP/1.1: bytes and header lists in, decisions and bytes out. Nothing here does I/O."""
