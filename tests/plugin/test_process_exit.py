"""A console command's process ends without the interpreter's last garbage collections, and keeps
what an exit promises: its exit code, its output, its exit handlers."""

import subprocess
import sys

import pytest

# Cyclic garbage (`Leftover`) is left for the exit: collections are off while the command runs, so
# only the interpreter's last collections could find it and call its finalizer.
PROGRAM = """
import atexit, gc, importlib, sys
from pathlib import Path

out, module, args = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]


class Leftover:
    def __del__(self):
        (out / "finalized").write_text("")


gc.disable()
leftover = Leftover()
leftover.cycle = leftover
del leftover
atexit.register(lambda: (out / "handler ran").write_text(""))
sys.argv = ["command", *args]
print("unflushed ", end="")
importlib.import_module(module).main()
"""


@pytest.mark.parametrize(("module", "args", "code", "says"), [
    ("cnmtune.plugin.cli", ["--version"], 0, "cnmtune "),
    ("cnmtune.plugin.cli", ["kernels", "--no-such-option"], 2, "--no-such-option"),
    ("cnmtune.plugin.cc.driver", ["--version"], 0, "cnmtune-cc "),
    ("cnmtune.plugin.cc.driver", ["--no-such-option"], 2, "--no-such-option"),
])
def test_a_command_exits_without_the_last_collections_and_keeps_code_output_and_handlers(
        tmp_path, module, args, code, says):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    ran = subprocess.run([sys.executable, str(program), str(tmp_path), module, *args],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == code, ran.stderr
    assert ran.stdout.startswith("unflushed ")
    assert says in ran.stdout + ran.stderr
    assert (tmp_path / "handler ran").exists()
    assert not (tmp_path / "finalized").exists()
