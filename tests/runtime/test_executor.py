"""Executors run real tasks in real processes and on a real Dask LocalCluster."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from cnmtune.runtime.executor import DaskExecutor, InlineExecutor, ProcessExecutor, make_executor


def square_or_fail(x: int) -> int:
    """A task: squares x; 13 raises, 99 kills its worker process outright."""
    if x == 13:
        raise ValueError("unlucky")
    if x == 99:
        os._exit(3)
    return x * x


def _collect(executor, args, more=()):
    """Submit `args`, and `more` once the first result arrives (submission while iterating)."""
    for a in args:
        executor.submit(square_or_fail, a)
    out, extra = {}, list(more)
    for outcome in executor.results():
        out[outcome.arg] = outcome.value if outcome.ok else outcome.error
        while extra:
            executor.submit(square_or_fail, extra.pop())
    return out


def test_inline_runs_tasks_and_reports_errors():
    with InlineExecutor() as ex:
        out = _collect(ex, [1, 2, 13], more=[5])
    assert out == {1: 1, 2: 4, 13: "ValueError: unlucky", 5: 25}


def test_process_workers_start_with_the_executor():
    """The worker processes start when the executor does, not at the first task: the caller's own
    set-up (a tune loads its model) runs while they import cnmtune; an executor given no task ends
    them when it closes instead of waiting for their start-up."""
    before = set(multiprocessing.active_children())
    with ProcessExecutor(2) as ex:
        started = set(multiprocessing.active_children()) - before
        assert len(started) == 2 and all(p.is_alive() for p in started)
        assert _collect(ex, [1, 2, 3]) == {1: 1, 2: 4, 3: 9}
        assert set(multiprocessing.active_children()) - before == started  # the same two ran the tasks
    assert [p.exitcode for p in started] == [0, 0]  # they had work: the close waited for them to finish
    with ProcessExecutor(2):  # given no task (a resumed dataset with nothing left): nothing to wait for
        idle = set(multiprocessing.active_children()) - before
    # ended, not awaited: none ran to its normal exit (the pool's own thread may reap one first, so
    # its exit code is not always recorded as -SIGTERM here)
    assert len(idle) == 2 and not any(p.exitcode == 0 for p in idle)


class _Leftover:
    """An object a task leaves alive in its worker, whose destructor would leave a mark."""

    def __init__(self, mark: str):
        self.mark = mark

    def __del__(self, _open=os.open, _close=os.close, _flags=os.O_CREAT | os.O_WRONLY):
        _close(_open(self.mark, _flags))  # bound at definition: the teardown clears the modules


_LEFT: list[_Leftover] = []


def leave_marks(folder: str) -> int:
    """A task: registers an exit hook that writes a file, and leaves an object with a destructor."""
    import atexit

    atexit.register(lambda: open(os.path.join(folder, f"hook-{os.getpid()}"), "w").close())
    _LEFT.append(_Leftover(os.path.join(folder, f"del-{os.getpid()}")))
    return os.getpid()


def test_process_workers_end_without_the_interpreters_teardown(tmp_path):
    """A worker runs the exit hooks its tasks' libraries registered, then ends at once, exit code 0:
    objects still alive are not finalized (a task leaves no work to a destructor)."""
    before = set(multiprocessing.active_children())
    with ProcessExecutor(1) as ex:
        ex.submit(leave_marks, str(tmp_path))
        pids = [o.value for o in ex.results()]
        workers = set(multiprocessing.active_children()) - before
    assert [p.exitcode for p in workers] == [0]
    assert sorted(f.name for f in tmp_path.iterdir()) == [f"hook-{pids[0]}"]


def test_process_pool_survives_a_dying_worker():
    with ProcessExecutor(2) as ex:
        out = _collect(ex, [1, 2, 99, 3, 4, 13, 6], more=[7])
    assert {k: v for k, v in out.items() if k not in (13, 99)} == {1: 1, 2: 4, 3: 9, 4: 16, 6: 36, 7: 49}
    assert out[13] == "ValueError: unlucky"
    assert "worker process died" in out[99]


def test_dask_local_cluster(dask_client):
    with DaskExecutor(dask_client) as ex:
        assert ex.workers == 2 and "Dask at tcp://" in ex.description
        out = _collect(ex, list(range(6)) + [13], more=[10])
    assert out == {**{i: i * i for i in range(6)}, 13: "ValueError: unlucky", 10: 100}
    assert dask_client.status == "running"  # a Client passed in is not closed by the executor


def test_make_executor_choices(dask_client):
    assert isinstance(make_executor(1), InlineExecutor)
    with make_executor(2) as ex:
        assert isinstance(ex, ProcessExecutor) and ex.workers == 2
    with make_executor(scheduler=dask_client.scheduler.address) as ex:
        assert isinstance(ex, DaskExecutor)


def test_unreachable_scheduler_is_one_clear_error():
    from cnmtune.errors import CnmtuneError

    with pytest.raises(CnmtuneError, match="cannot reach the Dask scheduler tcp://127.0.0.1:9"):
        DaskExecutor("tcp://127.0.0.1:9", connect_timeout=1)


def test_workers_exit_when_the_coordinator_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "coordinator.py"
    script.write_text(
        "import time\n"
        "from cnmtune.runtime.executor import ProcessExecutor\n"
        "if __name__ == '__main__':\n"
        "    ex = ProcessExecutor(2)\n"
        "    ex.submit(abs, -1)\n"
        "    assert [o.value for o in ex.results()] == [1]\n"  # the workers are up
        "    print(' '.join(str(p) for p in ex._pool._processes), flush=True)\n"
        "    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    workers = [int(p) for p in proc.stdout.readline().split()]
    assert workers
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in workers if _alive(p)]
    assert not alive, f"workers {alive} outlived their coordinator"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waiting for its reaper counts as gone
        return fh.read().split()[2] != "Z"
