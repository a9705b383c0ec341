"""splicer.config.loader: reading files; the package's public entry points."""
import pytest

import splicer.config
from splicer.config import Config, load, loads
from splicer.errors import ConfigError, ConfigErrors

GOOD = "frontend fe\n    bind :80\n    default_backend be\nbackend be\n    server s1 127.0.0.1:81\n"


def test_load_reads_a_file_and_names_it_as_given(tmp_path):
    path = tmp_path / "site.cfg"
    path.write_text(GOOD)
    config = load(str(path))
    assert isinstance(config, Config)
    assert config.path == str(path)
    assert config.frontends[0].binds[0].file == str(path)
    assert config.backends["be"].servers[0].line == 5


def test_load_errors_carry_the_path_as_given(tmp_path, monkeypatch):
    (tmp_path / "site.cfg").write_text("global\n    nbthread many\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigErrors) as info:
        load("site.cfg")
    assert str(info.value) == "site.cfg:2: 'nbthread' expects an integer, got 'many'"


def test_missing_file_is_a_single_cannot_read_error(tmp_path):
    path = str(tmp_path / "missing.cfg")
    with pytest.raises(ConfigErrors) as info:
        load(path)
    (error,) = info.value.errors
    assert (error.file, error.line, error.msg) == (path, 0,
                                                   "cannot read file: No such file or directory")
    assert str(info.value) == f"{path}: cannot read file: No such file or directory"


def test_directory_is_a_cannot_read_error(tmp_path):
    with pytest.raises(ConfigErrors) as info:
        load(str(tmp_path))
    assert [str(e) for e in info.value.errors] == [f"{tmp_path}: cannot read file: Is a directory"]


def test_invalid_utf8_is_reported_at_its_line(tmp_path):
    path = tmp_path / "site.cfg"
    path.write_bytes(b"global\n    maxconn 1\xff\n")
    with pytest.raises(ConfigErrors) as info:
        load(str(path))
    assert [str(e) for e in info.value.errors] == [f"{path}:2: invalid UTF-8 byte 0xff"]


def test_crlf_line_endings_are_accepted(tmp_path):
    path = tmp_path / "site.cfg"
    path.write_bytes(GOOD.replace("\n", "\r\n").encode())
    assert load(str(path)).backends["be"].servers[0].line == 5


def test_load_passes_env_to_the_lexer(tmp_path):
    path = tmp_path / "site.cfg"
    path.write_text(GOOD.replace("bind :80", 'bind ":${PORT}"'))
    assert load(str(path), env={"PORT": "8088"}).frontends[0].binds[0].port == 8088


def test_loads_default_path():
    with pytest.raises(ConfigErrors) as info:
        loads("frontend fe\n")
    assert [str(e) for e in info.value.errors] == [
        "<string>:1: frontend 'fe' has no 'bind' line",
        "<string>:1: frontend 'fe' has no default_backend",
    ]
    assert all(isinstance(e, ConfigError) for e in info.value.errors)


def test_empty_configuration_is_valid():
    assert loads("# nothing\n", "site.cfg") == Config(
        path="site.cfg", global_=splicer.config.Global(), frontends=(), backends={})


def test_config_package_imports_neither_asyncio_nor_socket():
    import subprocess
    import sys
    code = ("import sys, splicer.config; "
            "print(sorted(m for m in ('asyncio', 'socket') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("data, line", [
    (b"\n\xffglobal\n", 2),                        # a leading empty line counts
    (b"global\n    maxconn 1\xff\n\n\n\n", 2),      # lines after the bad byte do not
])
def test_invalid_utf8_is_reported_at_the_line_of_the_bad_byte(tmp_path, data, line):
    path = tmp_path / "site.cfg"
    path.write_bytes(data)
    with pytest.raises(ConfigErrors) as info:
        load(str(path))
    assert str(info.value) == f"{path}:{line}: invalid UTF-8 byte 0xff"
