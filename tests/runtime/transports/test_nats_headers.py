"""The NATS transport's client reads message headers with its own `_parse_header_lines` (fewer
steps than nats-py's): the very same dict as nats-py's for any header block, and the one every
message the transport fetches goes through."""

from __future__ import annotations

import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import Client

from loom.model import messaging as wire
from loom.runtime.messaging.transports.nats import _Client
from loom.runtime.transports import NatsTransport, StreamSpec
from tests.brokers import NatsServer
from tests.runtime.transports.test_conformance import CHANNEL, RESERVE, message

# the pieces header lines are made of: a name's characters (whitespace of every kind `str.isspace`
# knows, `bytes.strip` strips only some of them; a byte that is not ASCII), the colon, a value's
# bytes (invalid UTF-8 among them)
_NAME_BYTES = st.sampled_from(
    [b"Loom-Key", b"a", b"-", b" ", b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1f", b"\x85", b"\xc3"]
)
_VALUE_BYTES = st.sampled_from([b"v", b" ", b"\t", b":", b"\xc2\xa3", b"\xff", b"\x1c", b"="])
_LINE = st.one_of(
    st.tuples(
        st.lists(_NAME_BYTES, max_size=5).map(b"".join),
        st.sampled_from([b":", b": ", b":\t", b""]),
        st.lists(_VALUE_BYTES, max_size=5).map(b"".join),
    ).map(b"".join),
    st.just(b""),
    st.binary(max_size=12),
)


@given(st.lists(_LINE, max_size=8), st.sampled_from([b"", b"\r\n", b"\r\n\r\n", b"\n"]))
def test_headers_read_as_nats_py_reads_them(lines: list[bytes], end: bytes) -> None:
    raw = b"\r\n".join(lines) + end
    assert _Client._parse_header_lines(raw) == Client._parse_header_lines(raw)


def test_a_loom_message_s_headers_read_as_nats_py_reads_them() -> None:
    raw = b"".join(f"{k}: {v}\r\n".encode() for k, v in message(4).headers().items()) + b"\r\n"
    expected = Client._parse_header_lines(raw)
    assert _Client._parse_header_lines(raw) == expected
    assert expected == message(4).headers()


@pytest.fixture
async def transport(nats_transport: NatsTransport) -> NatsTransport:
    await nats_transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    return nats_transport


async def test_every_fetched_message_s_headers_are_read_by_the_transport_s_client(
    nats_server: NatsServer, transport: NatsTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[dict[str, str]] = []
    parse = _Client._parse_header_lines

    def counted(raw: bytes) -> dict[str, str]:
        read.append(parse(raw))
        return read[-1]

    monkeypatch.setattr(_Client, "_parse_header_lines", staticmethod(counted))
    sent = [message(n) for n in range(1, 4)]
    for m in sent:
        await transport.publish(m)
    # and one from another client, with a value beyond ASCII
    other = await nats.connect(nats_server.url)
    try:
        js = other.jetstream()
        odd = {**message(9).headers(), "Nats-Msg-Id": "evt-9"}
        await js.publish(
            wire.event_subject(CHANNEL, message(9).event_type),
            b'{"n": 9}',
            stream=wire.stream_name(CHANNEL),
            headers={**odd, wire.HEADER_CORRELATION_ID: "caf\u00e9"},
        )
    finally:
        await other.close()
    got = await transport.fetch(RESERVE, batch=10, timeout=2)
    assert [r.message.event_id for r in got] == ["evt-1", "evt-2", "evt-3", "evt-9"]
    assert [r.message for r in got[:3]] == sent
    assert got[3].message.correlation_id == "caf\u00e9"
    # each message's headers, read by the transport's client (a status answer of the server to
    # a fetch, with headers of its own, would be read by it too: not counted)
    ids = [block[wire.HEADER_EVENT_ID] for block in read if wire.HEADER_EVENT_ID in block]
    assert ids == ["evt-1", "evt-2", "evt-3", "evt-9"]
    print(f"header blocks read by the transport's client: {len(read)}, for {len(got)} messages")
