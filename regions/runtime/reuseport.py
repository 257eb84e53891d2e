"""Several processes serving one port: each binds its own listening socket with ``SO_REUSEPORT``
and the kernel spreads new connections over them (Linux). Python serves one core per process.

``serve_processes(count, serve_one)``: with ``count`` 1, ``serve_one(None)`` runs in this process
(uvicorn binds as usual). With more, this process forks ``count`` children, each calling
``serve_one(socket)`` with its own socket, and stays as their parent: SIGTERM or SIGINT is passed on
to every child, and when one child ends unasked the others are stopped and this process exits with
status 1, so whoever supervises it restarts the whole group. Each child has its own caches and
metrics (``/metrics`` answers for the process that accepted the connection).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from types import FrameType

ServeOne = Callable[[socket.socket | None], None]


def reuseport_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve_processes(count: int, host: str, port: int, serve_one: ServeOne) -> None:
    if count <= 1:
        serve_one(None)
        return
    sockets = [reuseport_socket(host, port) for _ in range(count)]  # all bound before any child serves
    children: list[int] = []
    stopping: list[int] = []  # the signal that stops the group, once one came

    def stop(signum: int, _: FrameType | None) -> None:
        stopping.append(signum)
        for pid in children:
            _signal(pid, signum)

    signal.signal(signal.SIGTERM, stop)  # before any child exists: no signal is missed
    signal.signal(signal.SIGINT, stop)
    for sock in sockets:
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            for other in sockets:
                if other is not sock:
                    other.close()
            code = 0
            try:
                serve_one(sock)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                code = 1
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
        children.append(pid)
    for sock in sockets:
        sock.close()
    _supervise(children, stopping)


def _supervise(children: list[int], stopping: list[int]) -> None:
    alive = set(children)
    failed = False
    while alive:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        alive.discard(pid)
        if not stopping:
            failed = True
            stopping.append(signal.SIGTERM)
            for other in alive:
                _signal(other, signal.SIGTERM)
        elif os.waitstatus_to_exitcode(status) not in (0, -signal.SIGTERM, -signal.SIGINT, 130):
            failed = True
    sys.exit(1 if failed else 0)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
