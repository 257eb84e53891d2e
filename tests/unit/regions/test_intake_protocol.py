"""The intake's HTTP protocol: the writes of one loop step leave as one, in order, and an answer is
whole on the wire (a real uvicorn server on loopback)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import uvicorn

from regions.intake.protocol import GatheredWrites, IntakeProtocol


class Recording:
    """The transport calls GatheredWrites makes (it is no port of the platform's: nothing to contract-test)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def write_eof(self) -> None:
        self.writes.append(b"<eof>")

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1)}.get(name, default)


def gathered() -> tuple[GatheredWrites, Recording]:
    transport = Recording()
    return GatheredWrites(transport, asyncio.get_running_loop()), transport  # type: ignore[arg-type]


async def test_the_writes_of_one_step_leave_as_one_write_in_order() -> None:
    writes, transport = gathered()
    writes.write(b"HTTP/1.1 202 Accepted\r\n\r\n")
    writes.write(b'{"accepted": []}')
    assert transport.writes == []
    assert writes.get_write_buffer_size() == 41
    await asyncio.sleep(0)
    assert transport.writes == [b'HTTP/1.1 202 Accepted\r\n\r\n{"accepted": []}']
    writes.writelines([b"a", b"b"])
    await asyncio.sleep(0)
    writes.write(b"c")
    await asyncio.sleep(0)
    assert transport.writes[1:] == [b"ab", b"c"]


async def test_an_end_of_stream_follows_what_is_gathered() -> None:
    writes, transport = gathered()
    writes.write(b"last answer")
    writes.write_eof()
    assert transport.writes == [b"last answer", b"<eof>"]


async def test_a_buffer_changed_after_its_write_is_written_as_it_was() -> None:
    writes, transport = gathered()
    buffer = bytearray(b"head")
    writes.write(buffer)
    buffer[:] = b"XXXX"
    await asyncio.sleep(0)
    assert transport.writes == [b"head"]


async def test_a_close_writes_what_is_gathered_first_and_an_abort_drops_it() -> None:
    writes, transport = gathered()
    writes.write(b"last answer")
    writes.close()
    assert transport.writes == [b"last answer"] and transport.closed
    await asyncio.sleep(0)  # the flush scheduled by the write finds nothing left
    assert transport.writes == [b"last answer"]

    writes, transport = gathered()
    writes.write(b"never sent")
    writes.abort()
    await asyncio.sleep(0)
    assert transport.writes == [] and transport.aborted


async def test_nothing_is_written_to_a_connection_that_closed_before_the_step_ended() -> None:
    writes, transport = gathered()
    writes.write(b"answer")
    transport.closed = True  # the peer went away
    await asyncio.sleep(0)
    assert transport.writes == []
    assert writes.get_extra_info("peername") == ("127.0.0.1", 1)  # the rest is the transport's


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = b'{"echo": "' + body + b'"}'
    await send({"type": "http.response.start", "status": 202,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": answer})


async def _read_answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    return head, await reader.readexactly(length)


async def test_a_server_on_the_protocol_answers_keep_alive_pipelined_and_closing_requests_whole() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(_app, http=IntakeProtocol, lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(20):  # an answer never written fails the test instead of hanging it
            while not server.started:
                if serving.done():
                    serving.result()  # a server that failed to start fails the test with its error
                await asyncio.sleep(0.01)
            await _exchange(port)
    finally:
        server.should_exit = True
        await serving


async def _exchange(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    def request(body: bytes, close: bool = False) -> bytes:
        connection = b"connection: close\r\n" if close else b""
        return (b"POST /internal/awards HTTP/1.1\r\nhost: x\r\ncontent-length: "
                + str(len(body)).encode() + b"\r\n" + connection + b"\r\n" + body)  # fmt: skip

    writer.write(request(b"one"))
    head, body = await _read_answer(reader)
    assert head.startswith(b"HTTP/1.1 202") and body == b'{"echo": "one"}'
    writer.write(request(b"two") + request(b"three") + request(b"four", close=True))  # pipelined
    answers = [await _read_answer(reader) for _ in range(3)]
    assert [body for _, body in answers] == [b'{"echo": "two"}', b'{"echo": "three"}', b'{"echo": "four"}']
    assert b"connection: close" in answers[2][0].lower()
    assert await reader.read() == b""  # closed after the last answer, which was written whole first
    writer.close()
    await writer.wait_closed()
