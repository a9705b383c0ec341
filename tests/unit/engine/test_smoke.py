"""splicer._engine / splicer.engine.binding: the extension loads and matches its declarations."""
import errno
import pathlib
import re

import pytest

from splicer.engine import binding
from splicer.engine.binding import ABI, UNTIL_EOF, PipePool, Stop
from splicer.errors import EngineBusy, EngineError, SplicerError


def test_ffi_and_lib_import():
    from splicer._engine import ffi, lib
    assert ffi is binding.ffi and lib is binding.lib
    for name in ("spl_pool_new", "spl_pool_free", "spl_pipe_get", "spl_pipe_put", "spl_pump", "spl_pool_stats"):
        assert callable(getattr(lib, name)), name


def test_abi_constant_matches_binding_and_cdef():
    from splicer._engine import lib
    cdef = (pathlib.Path(__file__).resolve().parents[3] / "native" / "engine.cdef").read_text()
    declared = int(re.search(r"^#define SPL_ENGINE_ABI (\d+)$", cdef, re.MULTILINE).group(1))
    assert isinstance(lib.SPL_ENGINE_ABI, int) and lib.SPL_ENGINE_ABI >= 1
    assert lib.SPL_ENGINE_ABI == ABI == declared


def test_stop_values_match_c_enum():
    assert {s.name: int(s) for s in Stop} == {
        "DONE": 0, "SRC_AGAIN": 1, "DST_AGAIN": 2, "EOF": 3, "BUDGET": 4, "SRC_ERROR": 5, "DST_ERROR": 6}


def test_struct_layouts():
    from splicer._engine import ffi
    assert ffi.sizeof("struct spl_pipe") == 24
    assert ffi.sizeof("struct spl_move") == 24
    assert ffi.sizeof("struct spl_stats") == 56


def test_until_eof_is_uint64_max():
    assert UNTIL_EOF == 2**64 - 1


def test_engine_errors_are_oserrors_in_the_splicer_tree():
    assert issubclass(EngineBusy, EngineError)
    assert issubclass(EngineError, OSError) and issubclass(EngineError, SplicerError)


def test_spl_pool_new_and_free_raw():
    from splicer._engine import ffi, lib
    out = ffi.new("struct spl_pool **")
    assert lib.spl_pool_new(0, 2, out) == 0
    assert out[0] != ffi.NULL
    st = ffi.new("struct spl_stats *")
    lib.spl_pool_stats(out[0], st)
    assert (st.pipes_used, st.pipes_free, st.pipes_max, st.pipe_size) == (0, 0, 2, 0)
    lib.spl_pool_free(out[0])
    lib.spl_pool_free(ffi.NULL)           # documented as a no-op


def test_spl_pool_new_zero_maxpipes_is_einval():
    from splicer._engine import ffi, lib
    assert lib.spl_pool_new(0, 0, ffi.new("struct spl_pool **")) == -errno.EINVAL
    with pytest.raises(EngineError) as exc:
        PipePool(maxpipes=0)
    assert exc.value.errno == errno.EINVAL
    assert not isinstance(exc.value, EngineBusy)


def test_job_struct_packing_matches_the_c_layout_and_refuses_out_of_range_values():
    from splicer._engine import ffi
    from splicer.engine.binding import _JOB, EngineHandle
    job = ffi.new("struct spl_job *")
    _JOB.pack_into(ffi.buffer(job), 0, 7, 5, -1, 1234, 8, 11, 22, 33, 2, 6, 44, 55, 66, 3, 4, 0, 9,
                   12, 13, 14, 15, 16, 1, 2**64 - 1, 7, 0x7F000001, 101, 0)
    assert (job.id, job.src_fd, job.dst_fd, job.max_bytes, job.flags, job.src_idle_ms, job.dst_idle_ms,
            job.out_len, job.out_buf, job.head_fd, job.head_first_ms, job.head_ms, job.head_limit,
            job.src_gen, job.dst_gen, job.next_id) == (7, 5, -1, 1234, 8, 11, 22, 33, 2, 6, 44, 55, 66, 3, 4, 9)
    assert (job.relay_status_max, job.cli_fd, job.cli_gen, job.cli_idle_ms, job.next_first_ms, job.next_ms,
            job.relay_flags, job.splice_min) == (0, 12, 13, 14, 15, 16, 1, 2**64 - 1)
    assert (job.xbe, job.xaddr, job.xmaxhdr) == (7, 0x7F000001, 101)
    h = EngineHandle(-1, 0, 2, 4)
    try:
        with pytest.raises(EngineError):
            h.submit(1, 2**40, 1, 10, 0, 0, 0)  # an fd beyond int32: refused, never truncated
        assert h.stats().jobs_done == 0
    finally:
        h.close()
