"""A gzip set piped on stdin is decompressed as its bytes arrive: the same bytes as the gzip
module gives (several members, zero padding, any split of the input), the same errors for a
cut or corrupt stream, and the lines of a flushed block readable before the producer goes on."""

from __future__ import annotations

import gzip
import io
import os
import threading
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.model.lines import gunzip_as_it_arrives, iter_stream_lines
from memaudit_fast.model.sets import _stdin_members


class Trickle(io.RawIOBase):
    """A stream that gives its bytes in the pieces it is told, one piece per read."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data, self.sizes, self.at = data, sizes or [1 << 20], 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = self.sizes[self.at % len(self.sizes)] if self.at < len(self.data) else 0
        piece = self.data[self.at:self.at + min(size, len(buffer))]
        buffer[:len(piece)] = piece
        self.at += len(piece)
        return len(piece)

    def read1(self, size: int = -1) -> bytes:
        buffer = bytearray(size if size > 0 else 1 << 20)
        return bytes(buffer[:self.readinto(buffer)])


@settings(max_examples=60, deadline=None)
@given(members=st.lists(st.binary(max_size=3000), min_size=1, max_size=3),
       padding=st.sampled_from([b"", b"\0" * 8]), sizes=st.lists(st.integers(1, 700), max_size=4))
def test_the_bytes_are_those_the_gzip_module_gives(members, padding, sizes):
    data = b"".join(gzip.compress(m) for m in members) + padding
    assert gunzip_as_it_arrives(Trickle(data, sizes)).read() == gzip.decompress(data) == b"".join(members)


def test_a_long_repetitive_stream_comes_out_whole():
    # Highly compressible input: zlib holds output beyond each read's room.
    text = b"".join(b'{"k": %d, "pad": "%s"}\n' % (k, b"a" * (k % 5000)) for k in range(3000))
    data = gzip.compress(text)
    assert gunzip_as_it_arrives(Trickle(data, [4096])).read() == text


@pytest.mark.parametrize(("data", "said"), [
    (gzip.compress(b'{"a": 1}\n' * 500)[:-20], "end-of-stream"),
    (gzip.compress(b'{"a": 1}\n')[:10] + b"\xff" * 40, "not valid gzip"),
])
def test_a_cut_or_corrupt_stream_ends_with_an_error_on_its_line(data, said):
    lines = list(iter_stream_lines(gunzip_as_it_arrives(io.BufferedReader(Trickle(data, []))), "<stdin>",
                                   line_cap=1 << 20, stream_cap=1 << 30))
    *read, (number, error) = lines
    assert isinstance(error, Exception) and said in str(error) and "cannot read further" in str(error)
    assert number == len(read) + 1


def test_the_lines_of_a_flushed_block_are_read_while_the_producer_pauses():
    lines = [b'{"format": "memaudit.package/1", "package_id": "p%d"}\n' % k for k in range(40)]
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    flushed = compressor.compress(b"".join(lines[:20])) + compressor.flush(zlib.Z_SYNC_FLUSH)
    read_end, write_end = os.pipe()
    os.write(write_end, flushed)  # and nothing more for now: the pipe stays open
    got: list[str] = []
    twenty = threading.Event()

    def read() -> None:
        with open(read_end, "rb", buffering=1 << 20) as stream:
            for where, _, _ in _stdin_members(stream):
                got.append(where)
                if len(got) == 20:
                    twenty.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert twenty.wait(60), f"{len(got)} of the 20 lines sent were read"
    os.write(write_end, compressor.compress(b"".join(lines[20:])) + compressor.flush())
    os.close(write_end)
    reader.join(60)
    assert got == [f"<stdin> line {k + 1}" for k in range(40)]
