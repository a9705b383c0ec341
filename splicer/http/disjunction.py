"""A merged rule condition compiled into one Python function: the request-part memos and
tests that acl.any_of() arranges, evaluated in one frame instead of a chain of closures.

Rule: sans-I/O, built once at load; the compiled function gives exactly what the same
parts evaluated one by one give (acl.AnyOf.__call__, the reference), only with less work:
on CPython every call of a closure costs about as much as a dictionary probe, so a run of
fifty ``deny if <acl>`` rules whose parts are each a key, a memo and a test spends most of
its time calling, not testing (see benchmarks/rules.py, ``--heads unique``).

Theory of operation. any_of() gives a list of Parts, in evaluation order. A Part is a
request part (a `key` of KEYS: the path, the query, a field's values, the client
address...) and its tests (view -> bool, evaluated in order until one holds), with whether
their verdict is remembered by the part's value. compile_parts() writes one function:

    def disjunction(self, view):
        k = view._path                      # the part's value, read inline
        if k is None:
            k = view.path()
        r = g0(k)                           # its memo (a dict's get)
        if r is None:                       # first time seen: run the tests, remember
            r = True if (t0_0(view) or t0_1(view)) else False
            if len(m0) >= MEMO_SIZE:
                m0.clear()
            if len(k) <= MEMO_KEY_MAX:
                m0[k] = r
        if r:
            return True
        ...
        return False

and returns it as the ``__call__`` of a subclass of the AnyOf it stands for (the class's
call slot is the function itself: no extra frame). The memos are the same as
sample.remembered()'s: MEMO_SIZE keys of at most MEMO_KEY_MAX bytes, started over when full.
A part keyed by the query string (SPARSE_KEYS) also counts the calls, and pauses its memo
(runs its tests without probing or filling it) for a while when it filled up too fast to
have paid: unique query strings then cost no memo work.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from splicer.http import sample as smp

KEYS = {
    "path": ("k = view._path\n{i}if k is None:\n{i}    k = view.path()", "bytes"),
    "query": ("k = view.target\n{i}q = k.find(b'?')\n{i}k = b'' if q < 0 else k[q:]", "bytes"),
    "urlp": ("k = view.url", "bytes"),
    "url": ("k = (view.url, view.target)", "tuple"),
    "method": ("k = view.method", "bytes"),
    "version": ("k = view.version", "bytes"),
    "line": ("k = (view.method, view.url, view.target, view.version)", "tuple"),
    "src": ("k = view.src", "bytes"),
    "dst": ("k = view.dst", "bytes"),
    "src_port": ("k = view.src_port", "int"),
    "dst_port": ("k = view.dst_port", "int"),
    "field": ("k = tuple(view.values({name!r})) if view.response_fields is None else None", "tuple"),
}
"""For each kind of request part: the statements that set ``k`` to its value in a view (as
sample.part_key() and sample.source_key() read it: two views with equal values give equal
samples; None: it cannot be told, the tests then run unremembered), and the value's shape
(what bounds its size: len() of bytes or str, sample._key_size() of a tuple, nothing for
an int)."""


ATTRIBUTE_KEYS = frozenset({"urlp", "method", "version", "src", "dst", "src_port", "dst_port"})
"""The kinds whose value is one attribute of the view: looking a verdict up by it costs
less than any test (a cheap probe is a fetch call and a matcher call), so a Part of these
kinds is always remembered."""


SPARSE_KEYS = frozenset({"query", "urlp", "url"})
"""The kinds whose value holds the query string: on real traffic it seldom repeats (ids,
cache-busters, tracking parameters), so their memo may cost a probe and an insert per
request and save nothing. Each such part watches its memo: one that fills (MEMO_SIZE new
values) in fewer than PAY_CALLS calls of the function (fewer than one probe in four hit)
is paused, its tests run as they are, for PAUSE_CALLS calls, then tried again (as
runtime/decisions.py's DecisionMemo pauses)."""

HEAD_KEYS = frozenset({"path", "method", "version", "field", "src", "dst", "src_port", "dst_port"})
"""The kinds whose value is a function of the request head without its query string (and
of the connection's addresses): a disjunction with several parts of these kinds remembers
their verdict together by one key, the head's bytes without the query
(RequestView.head_key) and the addresses they read, when the view has one: a request that
repeats its head but for the query (a cache-buster, an id, a search) costs one probe for
all of them, not one per part, nor reading each part."""

ADDRESS_KEYS = ("src", "src_port", "dst", "dst_port")

PAY_CALLS = smp.PAY_CALLS
"""Calls within which a sparse part's memo filling up means it did not pay."""

PAUSE_CALLS = smp.PAUSE_CALLS
"""Calls a sparse part's memo stays paused."""


@dataclass(frozen=True)
class Part:
    """One part of a compiled disjunction.

    Attributes:
        key: a KEYS kind, or "" for tests that read no single part (never remembered).
        tests: view -> bool functions, evaluated in order until one holds.
        remember: the verdict is remembered by the part's value (False: one cheap probe,
            not worth a memo, unless the value is one attribute: ATTRIBUTE_KEYS).
        name: the field name of a "field" part (lower case bytes; None: every field).
    """

    key: str
    tests: tuple
    remember: bool
    name: bytes | None = None


def compile_parts(parts: list[Part], base: type, filename: str = "<disjunction>",
                  prefilter: Callable[[bytes], object] | None = None) -> Callable:
    """The function ``(self, view) -> bool`` that is True when a test of some part holds,
    the parts in order (see the module's theory of operation).

    With two parts or more of HEAD_KEYS kinds, it first asks the view for its head key
    (RequestView.head_key: b"" when the view has none, as a response's, or one a rule
    changed): with one, the verdict of those parts is looked up by it (and the addresses
    they read), computed on a miss by them alone (with their own memos), and only the other
    parts run in order after it, as a function of their own; the memo pauses, as a sparse
    part's, when it fills up too fast to pay. Without one, every part runs in order.

    Args:
        parts: the parts, in evaluation order.
        base: unused by the code; named in its docstring (the class it is the call of).
        filename: what tracebacks show for the generated code.
        prefilter: bytes -> falsy when no part that is not of HEAD_KEYS can hold for a
            request whose target and URL it finds so (acl.query_prefilter): asked before
            those parts, after the head memo.

    Raises:
        KeyError: a part's key is not a KEYS kind.
    """
    head = [p for p in parts if p.key in HEAD_KEYS]
    if len(head) < 2:
        return _compile(parts, base, filename)
    rest = [i for i, p in enumerate(parts) if p.key not in HEAD_KEYS]
    addresses = [a for a in ADDRESS_KEYS if any(p.key == a for p in head)]
    key = "hk" if not addresses else "(hk, " + ", ".join(f"view.{a}" for a in addresses) + ")"
    lines = ["    if hp <= n and view.response_fields is None:",
             "        hk = view._hk",
             "        if hk is None:  # (RequestView.head_key, inline)",
             "            raw = view._raw",
             "            if raw is None:",
             "                hk = view._hk = b''",
             "            else:",
             "                sp = raw.find(b' ')",
             "                end = raw.find(b' ', sp + 1)",
             "                q = raw.find(b'?', sp + 1, end) if raw.startswith(b'/', sp + 1) else -1",
             "                hk = view._hk = raw if q < 0 else raw[:q] + raw[end:]",
             "        if hk:",
             f"            k = {key}",
             "            r = gh(k)",
             "            if r is None:",
             "                r = HEAD(self, view)",
             "                if len(mh) >= MEMO_SIZE:",
             "                    if n - hc < PAY_CALLS:",
             "                        hp = n + PAUSE_CALLS",
             "                    hc = n",
             "                    mh.clear()",
             "                if len(hk) <= MEMO_KEY_MAX:",
             "                    mh[k] = r",
             "            if r:",
             "                return True"]
    if prefilter is not None and rest:
        lines += ["            t = view.target",
                  "            if not PRE(t) and (view.url is t or not PRE(view.url)):",
                  "                return False"]
    memo: dict = {}
    extra = {"HEAD": _compile(head, base, filename + " head"), "mh": memo, "gh": memo.get, "hp": 0, "hc": 0,
             "PRE": prefilter}
    return _compile(parts, base, filename, lines, extra, rest)


def _compile(parts: list[Part], base: type, filename: str, first: list | None = None,
             extra: dict | None = None, then: list | tuple = ()) -> Callable:
    """compile_parts() without its head-key memo: the parts in order, after the lines
    `first` (which may read and assign ``n``, ``hp`` and ``hc``, the names of `extra`)
    and, inside their last block (12 spaces in), the parts of the indices `then`, in order,
    and ``return False``."""
    ns: dict = {"MEMO_SIZE": smp.MEMO_SIZE, "MEMO_KEY_MAX": smp.MEMO_KEY_MAX, "_key_size": smp._key_size,
                "PAY_CALLS": PAY_CALLS, "PAUSE_CALLS": PAUSE_CALLS, "n": 0}
    lines = ["def disjunction(self, view):", f'    """{base.__name__}.__call__, compiled (disjunction.compile_parts)."""']
    sparse = [i for i, p in enumerate(parts) if p.key in SPARSE_KEYS and (p.remember or p.key in ATTRIBUTE_KEYS)]
    if sparse or first:
        lines.append("    global n" + "".join(f", p{i}, c{i}" for i in sparse) + (", hp, hc" if first else ""))
        lines.append("    n += 1")
        for i in sparse:
            ns[f"p{i}"] = ns[f"c{i}"] = 0
    if first:
        ns.update(extra)
        lines += first
    of_part = [_part_lines(i, part, ns, i in sparse) for i, part in enumerate(parts)]
    if first:
        for i in then:
            lines += ["        " + line for line in of_part[i]]
        lines.append("            return False")
    for part_lines in of_part:
        lines += part_lines
    lines.append("    return False")
    code = compile("\n".join(lines) + "\n", filename, "exec")
    exec(code, ns)  # noqa: S102 (our own text, from the parts above: no input of a request)
    fn = ns["disjunction"]
    fn.source = "\n".join(lines)
    fn.parts = tuple(parts)
    return fn


def _part_lines(i: int, part: Part, ns: dict, sparse: bool) -> list[str]:
    """The lines (4 spaces in) that return True when part `i` holds, and the names they
    use, put in `ns`: its tests ``t<i>_<j>``, its memo ``m<i>`` and ``g<i>`` (its get),
    and for a `sparse` one its pause ``p<i>`` and last fill ``c<i>`` (declared global by
    the caller, with ``n``)."""
    lines: list[str] = []
    names = []
    for j, t in enumerate(part.tests):
        ns[f"t{i}_{j}"] = t
        names.append(f"t{i}_{j}(view)")
    any_test = " or ".join(names) if names else "False"
    if not part.key or not (part.remember or part.key in ATTRIBUTE_KEYS):
        lines.append(f"    if {any_test}:")
        lines.append("        return True")
        return lines
    read, shape = KEYS[part.key]
    memo: dict = {}
    ns[f"m{i}"], ns[f"g{i}"] = memo, memo.get
    body = "    "
    clear = [f"m{i}.clear()"]
    if sparse:  # paused while its memo does not pay: the tests run as they are
        lines.append(f"    if p{i} > n:")
        lines.append(f"        r = {any_test}")
        lines.append("    else:")
        body = "        "
        # it filled in fewer than PAY_CALLS calls: most probes missed, pause it
        clear = [f"if n - c{i} < PAY_CALLS:", f"    p{i} = n + PAUSE_CALLS", f"c{i} = n", f"m{i}.clear()"]
    lines.append(body + read.format(i=body, name=part.name))
    if part.key == "field":  # a response's fields: no key, the tests run as they are
        lines.append(f"{body}if k is None:")
        lines.append(f"{body}    r = {any_test}")
        lines.append(f"{body}else:")
        body += "    "
    size = {"bytes": "len(k) <= MEMO_KEY_MAX", "tuple": "_key_size(k) <= MEMO_KEY_MAX", "int": "True"}[shape]
    lines += [f"{body}r = g{i}(k)",
              f"{body}if r is None:",
              f"{body}    r = True if ({any_test}) else False",
              f"{body}    if len(m{i}) >= MEMO_SIZE:",
              *(f"{body}        {c}" for c in clear),
              f"{body}    if {size}:",
              f"{body}        m{i}[k] = r",
              "    if r:",
              "        return True"]
    # (a part's key read may be several lines: one string per line, for indenting)
    return [line for text in lines for line in text.split("\n")]
