"""README's first command: `python -m splicer.demo -c conf/site.cfg` starts the origins and
splicer, moves a file through it byte-exact, prints the counters, stops everything and
leaves nothing behind. Run here on conf/site.cfg with its ports moved to free ones and a
small file."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.e2e.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_demo_moves_the_file_byte_exact_and_leaves_nothing_behind(tmp_path):
    cfg = (ROOT / "conf" / "site.cfg").read_text()
    for old in ("127.0.0.1:8080", "127.0.0.1:8001", "127.0.0.1:8002"):
        assert old in cfg
        cfg = cfg.replace(old, f"127.0.0.1:{free_port()}")
    path = tmp_path / "site.cfg"
    path.write_text(cfg)
    pattern = os.path.join(tempfile.gettempdir(), "splicer-demo-*")
    before = set(glob.glob(pattern))
    out = subprocess.run([sys.executable, "-m", "splicer.demo", "-c", str(path), "--size", "8m"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "byte-exact through splicer: yes" in out.stdout
    m = re.search(r"splicer counters \(www\): spliced (\d+) bytes, copied (\d+) bytes, (\d+) requests", out.stdout)
    assert m is not None, out.stdout
    assert int(m.group(1)) == 3 * (8 << 20) and int(m.group(3)) == 3  # three GETs of 8 MiB, all spliced
    assert set(glob.glob(pattern)) == before  # its temporary directory is gone
