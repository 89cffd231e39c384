"""A small soak in its own process: `xdb soak` exits 0 only when every invariant holds."""

from __future__ import annotations

import subprocess
import sys


def test_a_small_soak_keeps_every_invariant() -> None:
    command = "from xdb.cli.main import main; raise SystemExit(main())"
    args = ["soak", "--processes", "40", "--seconds", "120"]
    done = subprocess.run(
        [sys.executable, "-c", command, *args], capture_output=True, text=True, timeout=200
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "40/40 completed" in done.stdout
