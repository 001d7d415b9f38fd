"""Executors: where batch work (dataset generation, top-k runs) runs.

Three backends behind one small interface: ``submit(fn, arg)`` queues a task (also while
results are being consumed), ``results()`` yields an ``Outcome`` per task as tasks finish, in
completion order, until nothing is pending.

- ``InlineExecutor``: in this process, one task at a time (debugging, tiny jobs).
- ``ProcessExecutor``: local worker processes (spawned, so no LLVM or numba state is forked).
  A task that kills its worker (a crash in native code) does not take the batch down: the
  tasks that were in flight are re-run one per fresh process, and the one that crashes again
  is reported as failed. Workers ignore Ctrl-C (SIGINT reaches the whole process group): the
  coordinator is interrupted, and leaving the executor with an exception stops them at once.
- ``DaskExecutor``: a Dask distributed cluster (``tcp://HOST:8786``, or a ``Client``/
  ``LocalCluster`` given directly). Dask re-runs tasks of dead workers; a task that keeps
  killing workers comes back as failed.

``fn`` must be a module-level function and ``arg`` picklable. Exceptions raised by a task
come back in ``Outcome.error`` as text; the executor never raises them.
"""

from __future__ import annotations

import abc
import atexit
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from cnmtune.errors import CnmtuneError

__all__ = ["DaskExecutor", "Executor", "InlineExecutor", "Outcome", "ProcessExecutor", "make_executor"]

Task = tuple[Callable[[Any], Any], Any]


@dataclass(frozen=True)
class Outcome:
    """The end of one task: its argument, and its value or the error text."""

    arg: Any
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, CnmtuneError):
        return str(exc)
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


class Executor(abc.ABC):
    """Runs submitted tasks somewhere; a context manager that shuts its workers down."""

    workers: int = 1

    @property
    @abc.abstractmethod
    def description(self) -> str:
        """Where tasks run, for progress lines and records ('4 local processes')."""

    @abc.abstractmethod
    def submit(self, fn: Callable[[Any], Any], arg: Any) -> None:
        """Queue `fn(arg)`."""

    @abc.abstractmethod
    def results(self) -> Iterator[Outcome]:
        """Outcomes in completion order, including tasks submitted while iterating."""

    def close(self) -> None:
        """Release the workers."""

    def abort(self) -> None:
        """Release the workers without waiting for the tasks in flight (the work stopped)."""
        self.close()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:  # an error or Ctrl-C: nobody waits for the results
            self.abort()


class InlineExecutor(Executor):
    """Runs every task in the calling process, in submission order."""

    description = "this process"

    def __init__(self) -> None:
        self._queue: deque[Task] = deque()

    def submit(self, fn, arg) -> None:
        self._queue.append((fn, arg))

    def results(self) -> Iterator[Outcome]:
        while self._queue:
            fn, arg = self._queue.popleft()
            try:
                yield Outcome(arg, fn(arg))
            except Exception as exc:  # a task's failure is data, not a crash of the batch
                yield Outcome(arg, error=_describe(exc))


class ProcessExecutor(Executor):
    """Local worker processes; at most two tasks per worker in flight, the rest queued here."""

    def __init__(self, workers: int | None = None):
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._context = multiprocessing.get_context("spawn")
        self._pool = self._new_pool(self.workers)
        self._queue: deque[Task] = deque()
        self._inflight: dict[Future, Task] = {}
        # the workers start now, not at the first task: a new process takes a second or more to
        # import cnmtune, time the caller spends on its own set-up (a tune loads its model)
        for _ in range(self.workers):
            self._pool.submit(_started)
        self._used = False  # a task submitted: close() waits for the workers, else it ends them

    @property
    def description(self) -> str:
        return f"{self.workers} local process{'es' if self.workers > 1 else ''}"

    def _new_pool(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=workers, mp_context=self._context,
                                   initializer=_worker_setup, initargs=(os.getpid(),))

    def submit(self, fn, arg) -> None:
        self._used = True
        self._queue.append((fn, arg))

    def _fill(self) -> Iterator[Outcome]:
        """Submit queued tasks, two per worker in flight; a pool that broke since the last wait (a
        worker died) is recovered first, with the outcomes of the tasks it had."""
        while self._queue and len(self._inflight) < 2 * self.workers:
            task = self._queue.popleft()
            try:
                self._inflight[self._pool.submit(*task)] = task
            except BrokenProcessPool:
                self._queue.appendleft(task)
                yield from self._recover([])

    def results(self) -> Iterator[Outcome]:
        yield from self._fill()
        while self._inflight:
            done, _ = wait(list(self._inflight), return_when=FIRST_COMPLETED)
            suspects: list[Task] = []
            for future in done:
                fn, arg = self._inflight.pop(future)
                exc = future.exception()
                if isinstance(exc, BrokenProcessPool):
                    suspects.append((fn, arg))
                elif exc is not None:
                    yield Outcome(arg, error=_describe(exc))
                else:
                    yield Outcome(arg, future.result())
            if suspects:
                yield from self._recover(suspects)
            yield from self._fill()

    def _recover(self, suspects: list[Task]) -> Iterator[Outcome]:
        """A worker died: re-run every task that was in flight alone, then start a new pool."""
        suspects += list(self._inflight.values())
        self._inflight.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for fn, arg in suspects:
            with self._new_pool(1) as alone:
                try:
                    yield Outcome(arg, alone.submit(fn, arg).result())
                except BrokenProcessPool:
                    yield Outcome(arg, error="the worker process died running this task "
                                             "(a crash in native code, e.g. LLVM, or out of memory)")
                except Exception as exc:
                    yield Outcome(arg, error=_describe(exc))
        self._pool = self._new_pool(self.workers)

    def close(self) -> None:
        if not self._used:  # nothing to wait for: workers still starting up are ended, not awaited
            self.abort()
            return
        self._pool.shutdown(wait=True, cancel_futures=True)

    def abort(self) -> None:
        # the pool has no public way to stop a running task: its worker processes are ended
        processes = list((self._pool._processes or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join()


def _end_at_exit() -> None:
    """A worker's last exit hook: end the process, skipping the interpreter's teardown, which
    frees every module (numba's and LLVM's state: 0.3-0.4 s a worker that had run a simulation,
    which the coordinator's close waited for at the end of every tune). Its tasks are done and
    their results sent by then (multiprocessing flushes its queues before the exit hooks), and
    the exit hooks registered after the worker's start, those of the libraries its tasks import,
    run before this one (last in, first out)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _started() -> None:
    """A task that only makes the pool start a worker process."""


def _worker_setup(parent: int) -> None:
    """Worker initializer: ignore Ctrl-C (the coordinator stops the workers), leave when the
    coordinator dies (e.g. killed), instead of lingering, and end without the interpreter's
    teardown (``_end_at_exit``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    atexit.register(_end_at_exit)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class DaskExecutor(Executor):
    """Tasks on a Dask distributed cluster: a scheduler address, a Client or a LocalCluster."""

    def __init__(self, scheduler: Any, connect_timeout: float = 20.0):
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise CnmtuneError("--scheduler needs the package 'distributed' (pip install "
                               "distributed)") from exc
        self._own = not isinstance(scheduler, Client)
        try:
            self._client = Client(scheduler, timeout=connect_timeout) if self._own else scheduler
        except OSError as exc:
            raise CnmtuneError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from exc
        self._address = self._client.scheduler.address
        self.workers = max(1, sum(w.get("nthreads", 1) for w in
                                  self._client.scheduler_info()["workers"].values()))
        self._pending = None
        self._args: dict[str, Any] = {}

    @property
    def description(self) -> str:
        return f"Dask at {self._address} ({self.workers} worker threads)"

    def submit(self, fn, arg) -> None:
        from distributed import as_completed

        future = self._client.submit(fn, arg, pure=False)
        self._args[future.key] = arg
        if self._pending is None:
            self._pending = as_completed([future], with_results=False)
        else:
            self._pending.add(future)

    def results(self) -> Iterator[Outcome]:
        if self._pending is None:
            return
        for future in self._pending:
            arg = self._args.pop(future.key)
            try:
                value = future.result()
            except Exception as exc:  # the task raised, or kept killing workers (KilledWorker)
                yield Outcome(arg, error=_describe(exc))
            else:
                yield Outcome(arg, value)
            finally:
                future.release()
        self._pending = None

    def close(self) -> None:
        if self._own:
            self._client.close()


def make_executor(workers: int | None = None, scheduler: Any = None) -> Executor:
    """Dask when a scheduler is given, else local processes (inline for one worker)."""
    if scheduler is not None:
        return DaskExecutor(scheduler)
    if workers == 1:
        return InlineExecutor()
    return ProcessExecutor(workers)
