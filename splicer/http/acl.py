"""ACLs and conditions: haproxy's ``acl`` lines and ``if``/``unless`` conditions, compiled
once at load, evaluated as pure functions of a RequestView (sample.py).

Rule: sans-I/O, and nothing is parsed per request. parse_acl() turns the words of an ``acl``
line into an AclExpr (a Fetch and a Matcher built from its patterns: frozensets for exact
strings, length-indexed sets for prefixes and suffixes, compiled regexes, parsed networks);
parse_condition() turns the words after ``if``/``unless`` into a Condition whose ACL names
are bound later (bind), when every ``acl`` line of the section is known. Pattern files
(``-f``) are read here, once, at load.

Theory of operation (haproxy configuration.txt 7.1 "ACL basics", 7.2 "Using ACLs to form
conditions", 7.4 "Pre-defined ACLs"):

- ``acl <name> <criterion> [flags] [operator] [<value>] ...``. Flags: ``-i`` (the patterns
  after it ignore case), ``-f <file>`` (patterns from a file: one per line, leading spaces
  and tabs stripped, empty lines and lines starting with ``#`` ignored), ``-m <method>``
  (one of MATCH_METHODS; placed before any ``-f``), ``--`` (end of flags).
- An ACL matches when any sample of its fetch matches any pattern. An absent sample (no
  such field, no query string) matches nothing, so ``!acl`` and ``unless acl`` are true for it;
  ``-m found`` only asks whether there is a sample.
- Several ``acl`` lines with the same name form one ACL: it matches when any of its lines
  does (they are evaluated in declaration order until one matches).
- A condition is a disjunction of conjunctions: ``[!]a [!]b ... or|'||' [!]c ...``; ``{ ... }``
  is an anonymous ACL (braces are words of their own). ``unless`` negates the whole.
- Integers: ``eq``/``ge``/``gt``/``le``/``lt`` before the values, or ranges ``a:b``, ``:b``,
  ``a:``. IP patterns: addresses or networks (``10.0.0.0/8``, ``10/8``, ``::1``, ``2001:db8::/32``);
  IPv4 patterns match IPv6 samples of the forms ::ffff:V4, ::V4 and 2002:V4::, and IPv4
  samples match IPv6 patterns as ::ffff:V4 (haproxy 7.1.6).
- ``-m dir``/``-m dom``: the pattern, stripped of leading and trailing delimiters, must
  appear between delimiters or the ends of the sample: ``/`` and ``?`` for dir, those and
  ``.`` and ``:`` for dom.
"""
from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import ahocorasick

from splicer.http import sample as smp
from splicer.http.disjunction import HEAD_KEYS, Part, compile_parts
from splicer.http.sample import BOOL, IP, STR, Fetch, RequestView, SampleError

MATCH_METHODS = ("found", "bool", "int", "ip", "bin", "len", "str", "sub", "reg", "beg", "end", "dir", "dom")
"""Values of ``-m`` (haproxy 7.1)."""

INT_OPERATORS = ("eq", "ge", "gt", "le", "lt")
"""Integer comparison operators (haproxy 7.1.2)."""

_NAME = re.compile(r"[A-Za-z0-9_.:-]+\Z")


class AclError(ValueError):
    """An ``acl`` line or a condition is wrong; ``str()`` is the message after "file:line: "."""


# -- matchers ---------------------------------------------------------------------------------

class Matcher:
    """A compiled set of patterns of one matching method: ``matcher(samples) -> bool`` is
    True when some sample matches some pattern. Built by compile_matcher()."""

    __slots__ = ("method", "test_one")

    def __init__(self, method: str, test_one: Callable) -> None:
        self.method = method
        self.test_one = test_one

    def __call__(self, samples: list) -> bool:
        test = self.test_one
        for s in samples:
            if test(s):
                return True
        return False


def _as_bytes(v) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, bool):
        return b"1" if v else b"0"
    return str(v).encode("ascii")


def _as_int(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, bytes):
        return smp._int_of(v)
    return None


def _as_ip(v):
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return v
    if isinstance(v, bytes):
        return smp.header_ip(v)
    return None


def _strings(patterns: list[tuple[str, bool]]) -> tuple[frozenset, frozenset]:
    """(exact patterns, lower-cased patterns of -i) as bytes."""
    exact = frozenset(p.encode() for p, i in patterns if not i)
    folded = frozenset(p.encode().lower() for p, i in patterns if i)
    return exact, folded


AUTOMATON_MIN = 24
"""From this many `-m sub` patterns on, they are searched together by one Aho-Corasick
automaton (pyahocorasick): one pass over the sample whatever their number, where a search per
pattern costs milliseconds for hundreds of patterns on a long header."""


def _automaton(patterns: frozenset):
    """A pyahocorasick automaton of `patterns` (bytes, as latin-1 text), or None for none."""
    if not patterns:
        return None
    auto = ahocorasick.Automaton()
    for p in patterns:
        text = p.decode("latin-1")
        auto.add_word(text, text)
    auto.make_automaton()
    return auto


def _substring_tester(exact: frozenset, folded: frozenset) -> Callable[[bytes], bool]:
    """bytes -> bool for `-m sub`: some exact pattern occurs in the sample, or some folded
    (`-i`, lower case) one in the sample ASCII-lower-cased (haproxy's -i). Patterns and
    sample are compared as latin-1 text (one character per byte: the same substrings):
    ``pattern in sample`` on bytes costs a buffer-protocol call per pattern on CPython
    3.11, on str it does not. Up to AUTOMATON_MIN patterns, one search each, as haproxy's
    -m sub; from there one Aho-Corasick pass. (A regex alternation is quicker on short
    samples but slower by far, with -i or long samples, on text that shares the patterns'
    letters.) An empty pattern occurs in every sample."""
    if b"" in exact or (b"" in folded):
        return lambda b: True
    if len(exact) + len(folded) >= AUTOMATON_MIN:
        ex_auto, fo_auto = _automaton(exact), _automaton(folded)

        def test_sub_many(b: bytes) -> bool:
            if ex_auto is not None:
                for _ in ex_auto.iter(b.decode("latin-1")):
                    return True
            if fo_auto is not None:
                for _ in fo_auto.iter(b.lower().decode("latin-1")):
                    return True
            return False
        return test_sub_many
    subs_ex = tuple(p.decode("latin-1") for p in exact)
    subs_fo = tuple(p.decode("latin-1") for p in folded)

    def test_sub(b: bytes) -> bool:
        if subs_ex:
            s = b.decode("latin-1")
            for p in subs_ex:
                if p in s:
                    return True
        if subs_fo:
            s = b.lower().decode("latin-1")
            for p in subs_fo:
                if p in s:
                    return True
        return False
    return test_sub


SMALL_SET = 16
"""Up to this many prefixes (suffixes), one C-level startswith (endswith) over the tuple of
them is quickest; beyond, patterns are grouped by length: one set probe per distinct length."""


def _by_length(pats: frozenset) -> tuple[tuple[int, frozenset], ...]:
    """Patterns grouped by length, for prefix/suffix lookups: one set probe per distinct
    length, however many patterns (haproxy keeps a prefix tree for the same reason)."""
    groups: dict[int, set] = {}
    for p in pats:
        groups.setdefault(len(p), set()).add(p)
    return tuple(sorted((n, frozenset(g)) for n, g in groups.items()))


def _word_matcher(patterns: list[tuple[str, bool]], delims: bytes) -> Callable:
    cls = re.escape(delims.decode()).encode()
    words = []
    for p, icase in patterns:
        word = p.encode().strip(delims)
        if word:
            words.append(re.escape(word) if not icase else b"(?i:" + re.escape(word) + b")")
    if not words:
        return lambda v: False
    # one alternation for every word: one search per sample, however many patterns
    search = re.compile(rb"(?:\A|[" + cls + rb"])(?:" + b"|".join(words) + rb")(?=\Z|[" + cls + rb"])").search
    return lambda v: search(v) is not None


_UNMERGEABLE_REGEX = re.compile(rb"\\[1-9]|\(\?P=|\(\?\(|\(\?[aiLmsux]+\)")
"""What keeps a regex out of a combined alternation: a back-reference or a conditional
group (group numbers shift in the alternation) or a global inline flag (it would apply to
every branch)."""


def _regex_search(patterns: list[tuple[str, bool]], what: str) -> Callable[[bytes], bool]:
    """bytes -> bool: some pattern (a Python regex; ``-i`` ignores case) is found in the
    sample. Patterns that can be are joined into one alternation (one search per sample);
    the alternation finds a match exactly when one of its branches would."""
    compiled = []
    for p, icase in patterns:
        try:
            compiled.append((p.encode(), icase, re.compile(p.encode(), re.I if icase else 0)))
        except re.error as exc:
            raise AclError(f"{what}: invalid regex '{p}': {exc}") from None
    joinable = [(b"(?i:" + src + b")" if icase else b"(?:" + src + b")")
                for src, icase, _ in compiled if not _UNMERGEABLE_REGEX.search(src)]
    searches = [r.search for src, _, r in compiled if _UNMERGEABLE_REGEX.search(src)]
    if len(joinable) > 1:
        try:
            searches.insert(0, re.compile(b"|".join(joinable)).search)
        except re.error:
            searches = [r.search for _, _, r in compiled]
    elif joinable:
        searches = [r.search for _, _, r in compiled]
    if len(searches) == 1:
        one = searches[0]
        return lambda b: one(b) is not None
    return lambda b: any(r(b) for r in searches)


_INT_PATTERN = re.compile(r"([0-9]*)(?::([0-9]*))?\Z")


def _int_ranges(values: Sequence[str], what: str) -> tuple[tuple[int | None, int | None], ...]:
    """Integer patterns: an optional operator first, then values or ranges (haproxy 7.1.2)."""
    op = None
    out = []
    values = list(values)
    if values and values[0] in INT_OPERATORS:
        op = values.pop(0)
        if not values:
            raise AclError(f"{what}: operator '{op}' expects a value")
    for text in values:
        neg = text.startswith("-") and text[1:].isdigit()
        m = _INT_PATTERN.match(text)
        if not neg and (m is None or text in ("", ":")):
            raise AclError(f"{what}: '{text}' is not an integer or a range (e.g. 80, 1024:65535, :1023)")
        if neg or m.group(2) is None:
            n = int(text)
            lo, hi = {None: (n, n), "eq": (n, n), "ge": (n, None), "gt": (n + 1, None),
                      "le": (None, n), "lt": (None, n - 1)}[op]
        else:
            if op is not None:
                raise AclError(f"{what}: operator '{op}' cannot be used with the range '{text}'")
            lo = int(m.group(1)) if m.group(1) else None
            hi = int(m.group(2)) if m.group(2) else None
        out.append((lo, hi))
    return tuple(out)


def _in_ranges(ranges) -> Callable:
    def test(n) -> bool:
        if n is None:
            return False
        for lo, hi in ranges:
            if (lo is None or n >= lo) and (hi is None or n <= hi):
                return True
        return False
    return test


def parse_ipv4(text: str) -> ipaddress.IPv4Address:
    """A dotted IPv4 address, with haproxy's abbreviated forms (``127.1`` is 127.0.0.1,
    ``10.12`` is 10.0.0.12: the last part fills the remaining bytes, as inet_aton does).

    Raises:
        ValueError: not such an address.
    """
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(p.isdigit() and len(p) <= 10 for p in parts):
        raise ValueError(text)
    nums = [int(p) for p in parts]
    last_bits = 8 * (5 - len(nums))
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 1 << last_bits:
        raise ValueError(text)
    value = 0
    for n in nums[:-1]:
        value = value << 8 | n
    value = value << last_bits | nums[-1]
    return ipaddress.IPv4Address(value)


def parse_network(text: str, what: str):
    """An IP pattern: an address or a network (IPv4 with a prefix length or a dotted mask;
    IPv6 with a prefix length). Host names are refused (no name resolution at load)."""
    addr, slash, mask = text.partition("/")
    try:
        if ":" in addr:
            return ipaddress.IPv6Network(text if slash else addr + "/128", strict=False)
        base = parse_ipv4(addr)
        if not slash:
            return ipaddress.IPv4Network(f"{base}/32")
        if "." in mask:
            return ipaddress.IPv4Network(f"{base}/{parse_ipv4(mask)}", strict=False)
        return ipaddress.IPv4Network(f"{base}/{mask}", strict=False)
    except ValueError:
        raise AclError(f"{what}: '{text}' is not an IP address or network") from None


def _ip_matcher(nets: list) -> Callable:
    v4 = tuple(n for n in nets if n.version == 4)
    v6 = tuple(n for n in nets if n.version == 6)
    # IPv4 patterns as integers: a set of host addresses and (network, mask) pairs
    v4_hosts = frozenset(int(n.network_address) for n in v4 if n.prefixlen == 32)
    v4_nets = tuple((int(n.network_address), int(n.netmask)) for n in v4 if n.prefixlen != 32)

    def test(v) -> bool:
        ip = _as_ip(v)
        if ip is None:
            return False
        if ip.version == 6:
            if any(ip in n for n in v6):
                return True
            if not v4:
                return False
            packed = ip.packed
            if packed[:12] == b"\0" * 10 + b"\xff\xff" or packed[:12] == b"\0" * 12:
                ip = ipaddress.IPv4Address(packed[12:])
            elif packed[:2] == b"\x20\x02":
                ip = ipaddress.IPv4Address(packed[2:6])
            else:
                return False
        elif v6 and any(ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed) in n for n in v6):
            return True
        x = int(ip)
        if x in v4_hosts:
            return True
        for net, mask in v4_nets:
            if x & mask == net:
                return True
        return False
    return test


def compile_matcher(method: str, patterns: list[tuple[str, bool]], what: str, sample_type: str = "") -> Matcher:
    """Compile patterns for one matching method.

    Args:
        method: one of MATCH_METHODS.
        patterns: (pattern text, ignore case) pairs, in order (``-i`` applies per pattern).
        what: the ACL for messages (``acl 'api'``).
        sample_type: the type of the samples it will see (sample.STR...): string samples
            are matched as they are, others converted first; "" for any.

    Returns:
        The Matcher.

    Raises:
        AclError: a bad integer, range, address or regex, or patterns given to
            ``-m found`` / ``-m bool``.
    """
    if method in ("found", "bool"):
        if patterns:
            raise AclError(f"{what}: '-m {method}' takes no pattern, got '{patterns[0][0]}'")
        if method == "found":
            return Matcher(method, lambda v: True)
        return Matcher(method, lambda v: bool(_as_int(v)) if not isinstance(v, bytes) else bool(v))
    if method in ("int", "len"):
        test = _in_ranges(_int_ranges([p for p, _ in patterns], what))
        if method == "len":
            return Matcher(method, lambda v: test(len(_as_bytes(v))))
        return Matcher(method, lambda v: test(_as_int(v)))
    if method == "ip":
        return Matcher(method, _ip_matcher([parse_network(p, what) for p, _ in patterns]))
    bt = _bytes_tester(method, patterns, what)
    if sample_type == STR:
        return Matcher(method, bt)
    return Matcher(method, lambda v: bt(_as_bytes(v)))


def _bytes_tester(method: str, patterns: list[tuple[str, bool]], what: str) -> Callable[[bytes], bool]:
    """bytes -> bool for the string matching methods (str, beg, end, sub, reg, dir, dom, bin)."""
    if method == "reg":
        return _regex_search(patterns, what)
    if method == "bin":
        try:
            blocks = frozenset(bytes.fromhex(p) for p, _ in patterns)
        except ValueError:
            raise AclError(f"{what}: '-m bin' patterns are hexadecimal strings of even length") from None
        return blocks.__contains__
    exact, folded = _strings(patterns)
    if method == "str":
        if not folded:
            return exact.__contains__
        if not exact:
            return lambda b: b.lower() in folded
        return lambda b: b in exact or b.lower() in folded
    if method in ("beg", "end") and len(exact) + len(folded) <= SMALL_SET:
        ex, fo = tuple(exact), tuple(folded)
        if not fo:
            return (lambda b: b.startswith(ex)) if method == "beg" else (lambda b: b.endswith(ex))
        if method == "beg":
            return lambda b: b.startswith(ex) or b.lower().startswith(fo)
        return lambda b: b.endswith(ex) or b.lower().endswith(fo)
    if method in ("beg", "end"):
        tables = tuple((t, fold) for t, fold in ((_by_length(exact), False), (_by_length(folded), True)) if t)
        beg = method == "beg"

        def test(b: bytes) -> bool:
            size = len(b)
            for table, fold in tables:
                s = b.lower() if fold else b
                for n, group in table:
                    if n > size:
                        break
                    if (s[:n] if beg else s[size - n:]) in group:
                        return True
            return False
        return test
    if method == "sub":
        test = _substring_tester(exact, folded)
        if b"" not in exact and b"" not in folded:
            # what a sample must hold for it to match: any of these (ASCII case aside, with
            # `folded`), for prefilters (query_prefilter)
            test.literals = (exact | folded, bool(folded))
        return test
    if method == "dir":
        return _word_matcher(patterns, b"/?")
    if method == "dom":
        return _word_matcher(patterns, b"/?.:")
    raise AclError(f"{what}: unknown matching method '{method}'")


# -- acl lines ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class AclExpr:
    """One ``acl`` line (or anonymous ``{ ... }`` ACL): a fetch and the patterns it is matched
    against. ``expr(view) -> bool``.

    Attributes:
        criterion: as written (``hdr_beg(host)``); method: the matching method used.
        fetch: the compiled Fetch; matcher: the compiled patterns.
        file, line: where it was written.
        patterns: the (pattern text, ignore case) pairs the matcher was compiled from,
            so that ACLs on one fetch can be merged (any_of), and what
            config/resolve.py checks against the configuration (the groups of
            ``http_auth_group``).
    """

    criterion: str
    method: str
    fetch: Fetch
    matcher: Matcher
    file: str = ""
    line: int = 0
    patterns: tuple = field(default=(), compare=False)
    test: Callable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # one closure per line, compiled here: evaluating it is a fetch and set probes
        object.__setattr__(self, "test", _tester(self.fetch.acl_fn or self.fetch.fn, self.matcher.test_one))

    def __call__(self, view: RequestView) -> bool:
        return self.test(view)


def read_pattern_file(path: str, base_dir: str, what: str) -> list[str]:
    """Patterns of a ``-f`` file: one per line (lines end at LF; a pattern ends at its
    line's first CR or NUL, as haproxy's pattern.c reads it), leading spaces and tabs
    stripped, empty lines and lines starting with '#' skipped, so that " #x" is the
    pattern "#x" (haproxy 7.1). A relative path is taken from the configuration file's
    directory.

    Raises:
        AclError: the file cannot be read or is not UTF-8.
    """
    full = path if os.path.isabs(path) else os.path.join(base_dir or ".", path)
    try:
        with open(full, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise AclError(f"{what}: cannot read pattern file '{path}': {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AclError(f"{what}: pattern file '{path}' is not UTF-8") from None
    out = []
    for raw in text.split("\n"):  # (haproxy reads lines up to LF: not str.splitlines(), which also
        # breaks at U+2028, U+0085, form feeds... a pattern may hold)
        if raw.startswith("#"):  # a comment; " #x" (leading space) is the pattern "#x"
            continue
        line = raw.lstrip(" \t")
        for stop in ("\r", "\0"):
            cut = line.find(stop)
            if cut >= 0:
                line = line[:cut]
        if line:
            out.append(line)
    return out


def parse_acl_expr(words: Sequence[str], what: str, base_dir: str = "", file: str = "",
                   line: int = 0) -> AclExpr:
    """Compile ``<criterion> [flags] [operator] [<value>] ...``.

    Args:
        words: the words after ``acl <name>`` (or inside ``{ }``).
        what: the ACL for messages (``acl 'api'`` or ``anonymous acl``).
        base_dir: directory relative ``-f`` files are read from.

    Raises:
        AclError: no criterion, a bad fetch (sample.parse_fetch), an unknown flag or
            ``-m`` method, ``-m`` with a derivative or after ``-f``, a missing pattern file,
            a bad pattern (compile_matcher), or a criterion whose type needs ``-m``.
    """
    if not words:
        raise AclError(f"{what}: missing criterion (e.g. 'path_beg /static')")
    criterion = words[0]
    try:
        fetch = smp.parse_fetch(criterion, base_dir)
    except SampleError as exc:
        raise AclError(f"{what}: {exc}") from None
    method = None
    icase = False
    patterns: list[tuple[str, bool]] = []
    seen_file = False
    rest = list(words[1:])
    i = 0
    while i < len(rest):
        w = rest[i]
        if not w.startswith("-") or w == "-" or (w[1:2].isdigit() and method in (None, "int", "len")):
            break
        if w == "--":
            i += 1
            break
        if w == "-i":
            icase = True
        elif w == "-n":
            pass  # no name resolution ever happens here
        elif w == "-m":
            if i + 1 >= len(rest):
                raise AclError(f"{what}: '-m' expects a matching method ({', '.join(MATCH_METHODS)})")
            if method is not None:
                raise AclError(f"{what}: only one '-m' matching method is allowed")
            if seen_file:
                raise AclError(f"{what}: '-m' must come before '-f'")
            if fetch.derivative:
                raise AclError(f"{what}: '-m' cannot be used with the ACL derivative '{criterion}' "
                               f"(use its base fetch instead)")
            method = rest[i + 1]
            if method not in MATCH_METHODS:
                raise AclError(f"{what}: unknown matching method '{method}' (supported: "
                               + ", ".join(MATCH_METHODS) + ")")
            i += 1
        elif w == "-f":
            if i + 1 >= len(rest):
                raise AclError(f"{what}: '-f' expects a file name")
            seen_file = True
            patterns += [(p, icase) for p in read_pattern_file(rest[i + 1], base_dir, what)]
            i += 1
        elif w in ("-M", "-u"):
            raise AclError(f"{what}: flag '{w}' is not supported")
        else:
            raise AclError(f"{what}: unknown flag '{w}' (supported: -i, -f, -m, -n, --)")
        i += 1
    patterns += [(p, icase) for p in rest[i:]]
    if method is None:
        method = fetch.method
    if fetch.type == IP and method not in ("ip", "found", "str", "beg", "end", "sub", "reg", "dir", "dom", "len"):
        raise AclError(f"{what}: '-m {method}' cannot match the address fetch '{criterion}'")
    if criterion.split("(")[0] == "method" and method == "str":
        # haproxy 7.3.6 "method": the ACL compares methods case-insensitively
        patterns = [(p, True) for p, _ in patterns]
    if not patterns and method not in ("found", "bool") and fetch.type != BOOL:
        raise AclError(f"{what}: no pattern to match '{criterion}' against (use '-m found' to test presence)")
    if fetch.type == BOOL and method == "bool":
        patterns = []
    matcher = compile_matcher(method, patterns, what, fetch.type)
    return AclExpr(criterion, method, fetch, matcher, file, line, tuple(patterns))


def parse_acl(words: Sequence[str], base_dir: str = "", file: str = "", line: int = 0) -> tuple[str, AclExpr]:
    """Read the words after ``acl``: a name, then an expression (parse_acl_expr).

    Returns:
        (name, expression).

    Raises:
        AclError: e.g. ``'acl' expects a name and a criterion``, an invalid name, or the
            expression's own errors.
    """
    if len(words) < 2:
        raise AclError("'acl' expects a name and a criterion: acl <name> <criterion> [flags] [values]")
    name = words[0]
    if not _NAME.match(name):
        bad = next(c for c in name if not _NAME.match(c))
        raise AclError(f"character '{bad}' is not permitted in acl name '{name}'")
    return name, parse_acl_expr(words[1:], f"acl '{name}'", base_dir, file, line)


# -- predefined ACLs ----------------------------------------------------------------------------

def _predef(words: list[str]) -> AclExpr:
    return parse_acl_expr(words, "predefined acl")


PREDEFINED_WORDS: dict[str, list[str]] = {
    "FALSE": ["always_false"],
    "TRUE": ["always_true"],
    "HTTP": ["req.proto_http"],
    "HTTP_1.0": ["req.ver", "1.0"],
    "HTTP_1.1": ["req.ver", "1.1"],
    "HTTP_2.0": ["req.ver", "2.0"],
    "HTTP_3.0": ["req.ver", "3.0"],
    "HTTP_CONTENT": ["req.hdr_val(content-length)", "gt", "0"],
    "HTTP_URL_ABS": ["url_reg", "^[^/:]*://"],
    "HTTP_URL_SLASH": ["url_beg", "/"],
    "HTTP_URL_STAR": ["url", "*"],
    "LOCALHOST": ["src", "127.0.0.1/8", "::1"],
    "METH_CONNECT": ["method", "CONNECT"],
    "METH_DELETE": ["method", "DELETE"],
    "METH_GET": ["method", "GET", "HEAD"],
    "METH_HEAD": ["method", "HEAD"],
    "METH_OPTIONS": ["method", "OPTIONS"],
    "METH_POST": ["method", "POST"],
    "METH_PUT": ["method", "PUT"],
    "METH_TRACE": ["method", "TRACE"],
}
"""haproxy 7.4's predefined ACLs and what each stands for (REQ_CONTENT aside)."""


def _predefined() -> dict[str, "Acl"]:
    out = {name: Acl(name, (_predef(words),)) for name, words in PREDEFINED_WORDS.items()}
    # haproxy: "req.len gt 0", data in the request buffer. splicer never buffers a body
    # before the rules run: a request announcing one (Content-Length > 0 or chunked) matches.
    f = smp.internal_fetch("req.body_announced")
    out["REQ_CONTENT"] = Acl("REQ_CONTENT", (AclExpr("req.len", "bool", f,
                                                      compile_matcher("bool", [], "REQ_CONTENT")),))
    return out


# -- named ACLs and conditions ------------------------------------------------------------------

@dataclass(frozen=True)
class Acl:
    """A named ACL: every ``acl`` line of that name in a section, in order; it matches when
    any of them does (haproxy 7.1). ``acl(view) -> bool``."""

    name: str
    exprs: tuple[AclExpr, ...]
    test: Callable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tests = tuple(e.test for e in self.exprs)
        if len(tests) == 1:
            object.__setattr__(self, "test", tests[0])
            return

        def test(view) -> bool:
            for t in tests:
                if t(view):
                    return True
            return False
        object.__setattr__(self, "test", test)

    def __call__(self, view: RequestView) -> bool:
        return self.test(view)


PREDEFINED: dict[str, Acl] = {}
"""Predefined ACLs by name (filled at import, below)."""


@dataclass(frozen=True)
class Condition:
    """``if``/``unless`` and its ACLs: ``cond(view) -> bool`` says whether the rule applies.

    Attributes:
        terms: the OR of ANDs: each term a tuple of (negated, ACL or its name) pairs; names
            (str) stay until bind() replaces them with Acls.
        unless: the condition was introduced by ``unless`` (its result is negated).
        text: the condition as written (for messages and docs).
        line: where it was written.
    """

    terms: tuple
    unless: bool = False
    text: str = ""
    line: int = 0
    names: tuple = field(default=(), compare=False)

    def __call__(self, view: RequestView) -> bool:
        for term in self.terms:
            for neg, acl in term:
                if acl.test(view) is neg:
                    break
            else:
                return not self.unless
        return self.unless

    def bind(self, acls: dict[str, Acl]) -> "Condition":
        """A copy whose ACL names are replaced with `acls` (falling back on PREDEFINED).

        Raises:
            KeyError: a name is neither (its name is the exception's argument).
        """
        def one(ref):
            if not isinstance(ref, str):
                return ref
            acl = acls.get(ref) or PREDEFINED.get(ref)
            if acl is None:
                raise KeyError(ref)
            return acl
        terms = tuple(tuple((neg, one(ref)) for neg, ref in term) for term in self.terms)
        return Condition(terms, self.unless, self.text, self.line, self.names)


class AnyOf:
    """Several conditions compiled into one: ``anyof(view) -> bool`` is True when any of
    them holds (any_of() builds it).

    Attributes:
        tests: the view -> bool tests evaluated in order until one holds.
        text: the conditions as written, joined with ``||`` (for messages).
    """

    __slots__ = ("tests", "text")

    def __init__(self, tests: tuple, text: str) -> None:
        self.tests, self.text = tests, text

    def __call__(self, view: RequestView) -> bool:
        for t in self.tests:
            if t(view):
                return True
        return False


def _negated(acl) -> Callable:
    test = acl.test
    return lambda view: not test(view)


def _conjunction(term: tuple) -> Callable:
    def test(view) -> bool:
        for neg, acl in term:
            if acl.test(view) is neg:
                return False
        return True
    return test


_PATTERN_METHODS = frozenset({"str", "beg", "end", "sub", "reg", "dir", "dom", "ip", "bin"})
"""Matching methods whose patterns are independent values: the lines of one such method
merge into one matcher of all their patterns (not so the integer ones, whose first value
may be an operator that applies to the rest of its own line)."""

_CHEAP_METHODS = frozenset({"found", "bool", "str", "bin", "int", "len"})
"""Matching methods that cost one set probe or comparison: not worth remembering."""


def _sample_test(exprs: list[AclExpr]) -> Callable:
    """One view -> bool test for ACL lines that share a fetch (Fetch.key): the fetch runs
    once, and each sample is matched against every line's patterns, the lines of one
    matching method merged into one matcher (their patterns together)."""
    by_method: dict[str, list[AclExpr]] = {}
    for e in exprs:
        by_method.setdefault(e.method, []).append(e)
    fetch = exprs[0].fetch
    ones = []
    for method, group in by_method.items():
        if len(group) == 1 or method not in _PATTERN_METHODS:
            ones += [e.matcher.test_one for e in group]
        else:
            patterns = [p for e in group for p in e.patterns]
            ones.append(compile_matcher(method, patterns, f"acl '{group[0].criterion}' (merged)",
                                        fetch.type).test_one)
    if len(ones) == 1:
        one = ones[0]
    else:
        tests = tuple(ones)

        def one(s) -> bool:
            for t in tests:
                if t(s):
                    return True
            return False
        if all(getattr(t, "literals", None) is not None for t in tests):
            one.literals = (frozenset().union(*(t.literals[0] for t in tests)), any(t.literals[1] for t in tests))
    return _tester(fetch.acl_fn or fetch.fn, one)


def _tester(fn: Callable, one: Callable) -> Callable[[RequestView], bool]:
    """view -> whether `one` holds for some sample of the fetch function `fn` (haproxy 7.1:
    an ACL matches when any sample matches). The ``query`` and ``path`` fetches give one
    sample at most: theirs is read inline, without a list."""
    if fn is smp.query_samples:
        def test_query(view) -> bool:
            t = view.target
            q = t.find(b"?")
            return q >= 0 and one(t[q + 1:])
        literals = getattr(one, "literals", None)
        if literals is not None:  # it holds only when the query holds one of them
            test_query.literals = literals
        return test_query
    if fn is smp.path_samples:
        return lambda view: one(view.path())

    def test(view) -> bool:
        for s in fn(view):
            if one(s):
                return True
        return False
    return test


def _first_true(tests: tuple) -> Callable:
    if len(tests) == 1:
        return tests[0]

    def test(view) -> bool:
        for t in tests:
            if t(view):
                return True
        return False
    return test


def _source(acl) -> tuple:
    """The Fetch.source every line of `acl` (an Acl, or an anonymous AclExpr) shares, or ()."""
    exprs = (acl,) if isinstance(acl, AclExpr) else getattr(acl, "exprs", ())
    sources = {e.fetch.source for e in exprs}
    return sources.pop() if len(sources) == 1 else ()


_LINE = ("line",)


def _part(acl) -> str | None:
    """The request-line part (sample.line_part) every line of `acl` (an Acl, or an
    anonymous AclExpr) reads, or None (lines on different parts, or not on the line)."""
    exprs = (acl,) if isinstance(acl, AclExpr) else getattr(acl, "exprs", ())
    parts = {smp.line_part(e.fetch.key[0]) if e.fetch.key and e.fetch.source == _LINE else None
             for e in exprs}
    return parts.pop() if len(parts) == 1 else None


def any_of(conds: Sequence) -> AnyOf:
    """Compile the disjunction of bound conditions (Condition, AnyOf, or any view -> bool)
    into one test that does less work than evaluating them one by one.

    - Each condition is rewritten as an OR of tests: the terms of an ``if`` condition; the
      negated ACLs of a one-term ``unless`` condition (``unless a b`` is ``!a || !b``); a
      condition that rewrites to nothing simpler stays one test.
    - An ACL tested positively on its own contributes each of its lines (an ACL matches
      when any of its lines does), and the lines whose fetches give the same samples
      (Fetch.key) become one test (_sample_test): the fetch runs once, and the patterns of
      its lines of one matching method are compiled together. haproxy 7.1: an ACL matches
      when any sample matches any pattern, so the merged line holds exactly when one of
      the lines would.
    - Tests that read only one part of the request (Fetch.source: its target, URL, one
      field, the client address...) are OR-ed together and their result is remembered by
      that part's value (sample.remembered, sample.source_key): the same path, Host or client
      asks nothing twice. The request line's tests make one test too, but inside it each
      is remembered by exactly the part of the line its fetch reads (sample.line_part,
      sample.part_key: the path, the query, the method...), so a request with a new query
      string re-runs only the query's tests. A test that is one set probe or comparison
      (a ``method`` or ``req.ver`` ACL, negated or not) is not remembered at all.

    Fifty ``deny if <acl>`` rules on the path, the Host, a few fields and the client
    address cost a handful of dictionary probes for a request seen before.

    Args:
        conds: conditions whose ACL names are bound (Condition.bind).

    Returns:
        The AnyOf (its tests in the order their first line appeared).
    """
    groups: dict[tuple, list[AclExpr]] = {}
    slots: list = []  # (source, line part, test or fetch key standing for its merged test)

    def literal(neg: bool, acl) -> None:
        exprs = (acl,) if isinstance(acl, AclExpr) else getattr(acl, "exprs", None)
        if neg or exprs is None:
            cheap = exprs is not None and len(exprs) == 1 and exprs[0].method in _CHEAP_METHODS
            slots.append((_source(acl), _part(acl), (_negated(acl) if neg else acl.test, cheap)))
            return
        for e in exprs:
            key = e.fetch.key
            urlp = smp.urlp_found_args(e.fetch) if e.method == "found" else None
            if urlp is not None:  # url_param(<name>) -m found: one lookup for every name
                key = ("url_param -m found", *urlp[1:])
                if key not in groups:
                    groups[key] = []
                    slots.append((e.fetch.source, _part(e), key))
                groups[key].append(e)
                continue
            if not key:
                slots.append((e.fetch.source, None, e.test))
                continue
            if key not in groups:
                groups[key] = []
                slots.append((e.fetch.source, _part(e), key))
            groups[key].append(e)

    texts = []
    for c in conds:
        texts.append(getattr(c, "text", "") or repr(c))
        if isinstance(c, AnyOf):
            slots.extend(((), None, t) for t in c.tests)
        elif not isinstance(c, Condition):
            slots.append(((), None, c))
        elif not c.unless:
            for term in c.terms:
                if len(term) == 1:
                    literal(*term[0])
                else:
                    slots.append(((), None, _conjunction(term)))
        elif len(c.terms) == 1:
            for neg, acl in c.terms[0]:
                literal(not neg, acl)
        else:
            slots.append(((), None, c))
    # one entry per source, in the order each first appears; a test that reads no single
    # source is an entry of its own
    entries: list[tuple[tuple, list]] = []
    of_source: dict[tuple, list] = {}
    for source, part, item in slots:
        if type(item) is tuple and callable(item[0]):  # (test, whether it is one probe)
            item, one_probe = item
        elif type(item) is tuple and item[0] == "url_param -m found":
            exprs = groups[item]
            one_probe = len(exprs) == 1
            item = smp.params_found(frozenset(smp.urlp_found_args(e.fetch)[0] for e in exprs), *item[1:])
        elif type(item) is tuple:  # a fetch key, standing for its merged lines
            exprs = groups[item]
            one_probe = len(exprs) == 1 and exprs[0].method in _CHEAP_METHODS
            item = exprs[0].test if len(exprs) == 1 else _sample_test(exprs)
        else:
            one_probe = False
        if not source:
            entries.append(((), [(None, item, False)]))
            continue
        if source not in of_source:
            of_source[source] = []
            entries.append((source, of_source[source]))
        of_source[source].append((part, item, one_probe))
    tests = []
    compiled: list[Part] = []
    for source, items in entries:
        if not source:
            tests.append(items[0][1])
            compiled.append(Part("", (items[0][1],), False))
            continue
        # the request line's tests are remembered by the part each reads (sample.line_part:
        # the path, the query...), so that a new query string misses only the query's tests
        by_part: dict = {}
        for part, item, one_probe in items:
            by_part.setdefault(part if source == _LINE else None, []).append((item, one_probe))
        parts = []
        for part, its in by_part.items():
            test = _first_true(tuple(item for item, _ in its))
            remember = len(its) > 1 or not its[0][1]  # one set probe is not worth remembering
            if remember:
                test = smp.remembered(test, smp.part_key(part) if part else smp.source_key(source))
            parts.append(test)
            compiled.append(Part(part or source[0], tuple(item for item, _ in its), remember,
                                 source[1] if source[0] == "field" else None))
        tests.append(_first_true(tuple(parts)))
    text = " || ".join(texts)
    rest = [p for p in compiled if p.key not in HEAD_KEYS]
    call = compile_parts(compiled, AnyOf, f"<any_of {text[:60]}>", query_prefilter(rest) if rest else None)
    cls = type("AnyOf", (AnyOf,), {"__slots__": (), "__call__": call,
                                   "__doc__": AnyOf.__doc__})
    return cls(tuple(tests), text)


PREFILTER_KEYS = frozenset({"query", "urlp"})
"""The request parts whose tests a query prefilter may stand before: they read the query
string of the target (``query``) or of the URL as sent (``url_param``)."""


def query_prefilter(parts: Sequence[Part]) -> Callable[[bytes], object] | None:
    """bytes -> truthy when the text may hold a string that some test of `parts` needs
    (each test's ``literals``: ``-m sub`` patterns, ``url_param(<name>) -m found``'s
    ``<name>=``), falsy when none of them can hold; or None when some part is not a
    PREFILTER_KEYS one or some test has no literals. A substring of the query is one of
    the target and of the URL, so a search of those (one C call) tells first, for most
    requests, that the parts do not hold (http/disjunction.py): one pattern search, not a
    fetch, a slice and a matcher per part. ASCII case is ignored when a test ignores it."""
    literals: set = set()
    icase = False
    for p in parts:
        if p.key not in PREFILTER_KEYS:
            return None
        for t in p.tests:
            lits = getattr(t, "literals", None)
            if lits is None or not lits[0] or b"" in lits[0]:
                return None
            literals |= lits[0]
            icase = icase or lits[1]
    if not literals:
        return None
    if len(literals) < AUTOMATON_MIN:
        return re.compile(b"|".join(re.escape(x) for x in sorted(literals)), re.IGNORECASE if icase else 0).search
    auto = _automaton(frozenset(x.lower() for x in literals) if icase else frozenset(literals))

    def search(b: bytes) -> bool:
        for _ in auto.iter((b.lower() if icase else b).decode("latin-1")):
            return True
        return False
    return search


def condition_reads(cond) -> frozenset | None:
    """What a bound condition of an http-request rule is a pure function of besides the
    request head's bytes: the union of its fetches' Fetch.reads (a frozenset of "src",
    "src_port", "dst", "dst_port"; empty: the head alone), or None when some fetch reads
    anything else, or the condition is not a Condition whose ACLs are bound (an AnyOf, a
    name left unbound: what it reads cannot be told). None (no condition) reads nothing.
    runtime/decisions.py remembers a frontend's decisions by these parts."""
    if cond is None:
        return frozenset()
    if type(cond) is not Condition:
        return None
    out: set = set()
    for term in cond.terms:
        for _neg, ref in term:
            if isinstance(ref, AclExpr):
                exprs = (ref,)
            elif isinstance(ref, Acl):
                exprs = ref.exprs
            else:
                return None
            for e in exprs:
                reads = e.fetch.reads
                if reads is None:
                    return None
                out.update(reads)
    return frozenset(out)


def parse_condition(words: Sequence[str], base_dir: str = "", file: str = "", line: int = 0) -> Condition:
    """Read ``if|unless <condition>`` (the keyword included).

    Args:
        words: e.g. ``["if", "host_www", "!", "{", "path_beg", "/admin", "}"]``; ``!`` may
            also be glued to a name (``!host_www``).

    Returns:
        A Condition with its named ACLs still unbound (Condition.names lists them).

    Raises:
        AclError: a missing or empty condition, an unclosed or stray brace, an operator
            with nothing on one side, or a bad anonymous ACL (parse_acl_expr).
    """
    if not words or words[0] not in ("if", "unless"):
        raise AclError("a condition starts with 'if' or 'unless'")
    kw = words[0]
    rest = []
    for w in words[1:]:  # "!{" is "!" then "{" (haproxy reads "!{ ... }" too)
        if w.startswith("!") and w.lstrip("!") == "{":
            rest += ["!"] * (len(w) - 1) + ["{"]
        else:
            rest.append(w)
    if not rest:
        raise AclError(f"'{kw}' expects a condition (e.g. '{kw} host_www' or '{kw} {{ path_beg /api }}')")
    terms: list[list] = [[]]
    names: list[str] = []
    neg = False
    i = 0
    while i < len(rest):
        w = rest[i]
        if w in ("or", "||"):
            if neg or not terms[-1]:
                raise AclError(f"'{w}' has no ACL on its left in '{' '.join(words)}'")
            terms.append([])
        elif w == "!":
            neg = not neg
        elif w == "{":  # to the first "}": a "{" inside is a pattern (haproxy's parse_acl_cond)
            j = i + 1
            while j < len(rest) and rest[j] != "}":
                j += 1
            if j >= len(rest):
                raise AclError(f"missing '}}' in condition '{' '.join(words)}'")
            inner = rest[i + 1:j]
            if not inner:
                raise AclError("empty anonymous acl '{ }'")
            terms[-1].append((neg, parse_acl_expr(inner, "anonymous acl", base_dir, file, line)))
            neg = False
            i = j
        elif w == "}":
            raise AclError(f"unexpected '}}' in condition '{' '.join(words)}'")
        else:
            while w.startswith("!"):
                neg, w = not neg, w[1:]
            if not w:
                raise AclError(f"'!' without an ACL in '{' '.join(words)}'")
            if not _NAME.match(w):
                raise AclError(f"invalid ACL name '{w}' in condition")
            terms[-1].append((neg, w))
            names.append(w)
            neg = False
        i += 1
    if neg:
        raise AclError(f"'!' without an ACL in '{' '.join(words)}'")
    if not terms[-1]:
        raise AclError(f"'{rest[-1]}' has no ACL on its right in '{' '.join(words)}'")
    return Condition(tuple(tuple(t) for t in terms), kw == "unless", " ".join(words), line, tuple(names))


def split_condition(args: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """Split a rule's words at its first ``if``/``unless``: (words before, condition words
    including the keyword, or None when there is none)."""
    for i, w in enumerate(args):
        if w in ("if", "unless"):
            return list(args[:i]), list(args[i:])
    return list(args), None


PREDEFINED.update(_predefined())
