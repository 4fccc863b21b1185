"""Bounds on compressed import files: what an archive may expand to is checked before anything reads it.

An Inspect AI `.eval` log is a zip archive, and the upload limit (ICEWATER_UPLOAD_MAX_MB) counts its
compressed bytes: a 214 KB `.eval` expanded to a 200 MB response and grew a web worker to 2 GB. So
before inspect_ai opens an archive, `check_archive` reads it twice, cheaply:

1. its central directory: how many members, and the size each declares (ZipInfo.file_size), one by
   one and all together, against ArchiveLimits;
2. every member decompressed as a stream, a chunk at a time, counting the bytes that really come out:
   a member that expands past the size it declares is refused. Declared sizes are the sender's to
   write, and inspect_ai's readers do not hold a member to them (its file reader inflates a whole
   member with zlib.decompress; zipfile's zstd support decompresses a whole read without a bound).

Once both pass, whatever inspect_ai decompresses is bounded by the limits. The page and the API use the
ICEWATER_UPLOAD_* limits; the command line has larger ones, ICEWATER_CLI_* (config/settings.py).
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from django.conf import settings

from evals.problems import ImportFailed, Problems

MB = 1024 * 1024
# A member is decompressed this much at a time while it is counted.
_CHUNK = 256 * 1024
# The local file header before each member's data (PKWARE APPNOTE 4.3.7): 30 bytes, then name and extra field.
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_STORED, _DEFLATED, _ZSTD = 0, 8, 93


@dataclass(frozen=True)
class ArchiveLimits:
    total_bytes: int  # all members together, uncompressed
    member_bytes: int  # any one member, uncompressed
    members: int
    prefix: str  # of the variables that set them, named in refusals: ICEWATER_UPLOAD or ICEWATER_CLI
    elsewhere: str = ""  # what to do instead, for a refusal

    @classmethod
    def upload(cls) -> ArchiveLimits:
        """The Import page and the API."""
        return cls(
            settings.ICEWATER_UPLOAD_MAX_EXPANDED_BYTES,
            settings.ICEWATER_UPLOAD_MAX_MEMBER_BYTES,
            settings.ICEWATER_UPLOAD_MAX_MEMBERS,
            "ICEWATER_UPLOAD",
            "; import it with manage.py on the server, where the bound is "
            f"{_mb(settings.ICEWATER_CLI_MAX_EXPANDED_BYTES)} (ICEWATER_CLI_MAX_EXPANDED_MB)",
        )

    @classmethod
    def command_line(cls) -> ArchiveLimits:
        return cls(
            settings.ICEWATER_CLI_MAX_EXPANDED_BYTES,
            settings.ICEWATER_CLI_MAX_MEMBER_BYTES,
            settings.ICEWATER_CLI_MAX_MEMBERS,
            "ICEWATER_CLI",
        )


def _mb(size: int) -> str:
    return f"{size / MB:,.0f} MB" if size >= MB else f"{size:,} bytes"


def check_archive(stream: BinaryIO, limits: ArchiveLimits, problems: Problems) -> None:
    """Refuse (ImportFailed, naming the limit) an archive beyond `limits`; leaves the stream at its start."""
    stream.seek(0)
    try:
        with zipfile.ZipFile(stream) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        # Refused here, not left to inspect_ai: its own zip reader might accept what this one cannot check.
        raise problems.fatal(
            None,
            None,
            f"inspect_ai cannot read this as an Inspect AI eval log ({type(exc).__name__}: {exc}); "
            "give a .eval or .json log as `inspect eval` writes it",
        ) from None
    _check_directory(infos, limits, problems)
    for info in infos:
        _check_member(stream, info, problems)
    stream.seek(0)


def _check_directory(infos: list[zipfile.ZipInfo], limits: ArchiveLimits, problems: Problems) -> None:
    if len(infos) > limits.members:
        raise problems.fatal(
            None,
            None,
            f"the archive has {len(infos):,} members; at most {limits.members:,} are read here "
            f"({limits.prefix}_MAX_MEMBERS){limits.elsewhere}",
        )
    for info in infos:
        if info.file_size > limits.member_bytes:
            raise problems.fatal(
                None,
                info.filename,
                f"this member expands to {info.file_size:,} bytes; at most {_mb(limits.member_bytes)} a member "
                f"is read here ({limits.prefix}_MAX_MEMBER_MB){limits.elsewhere}",
            )
    total = sum(info.file_size for info in infos)
    if total > limits.total_bytes:
        raise problems.fatal(
            None,
            None,
            f"the archive expands to {total:,} bytes; at most {_mb(limits.total_bytes)} in all is read here "
            f"({limits.prefix}_MAX_EXPANDED_MB){limits.elsewhere}",
        )


class _MemberData:
    """The compressed bytes of one member, as a stream that ends where the member's data ends."""

    def __init__(self, stream: BinaryIO, start: int, size: int) -> None:
        self._stream, self._position, self._left = stream, start, size

    def read(self, size: int = -1) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        self._stream.seek(self._position)
        data = self._stream.read(size)
        self._position += len(data)
        self._left -= len(data)
        return data


def _member_data(stream: BinaryIO, info: zipfile.ZipInfo, problems: Problems) -> _MemberData:
    stream.seek(info.header_offset)
    header = stream.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
        raise problems.fatal(None, info.filename, "the archive is damaged (no local header where it should be)")
    name_length, extra_length = _LOCAL_HEADER.unpack(header)[-2:]
    return _MemberData(stream, info.header_offset + len(header) + name_length + extra_length, info.compress_size)


def _check_member(stream: BinaryIO, info: zipfile.ZipInfo, problems: Problems) -> None:
    """Decompress one member a chunk at a time; refuse it as soon as more comes out than it declares."""
    if info.flag_bits & 0x1:
        raise problems.fatal(None, info.filename, "this member is encrypted; Inspect AI logs are not")
    data = _member_data(stream, info, problems)
    produced = 0
    try:
        for piece in _decompressed(data, info.compress_type, problems, info.filename):
            produced += piece
            if produced > info.file_size:
                raise problems.fatal(
                    None,
                    info.filename,
                    f"this member expands past the {info.file_size:,} bytes the archive declares for it (a zip bomb?)",
                )
    except ImportFailed:
        raise
    except Exception as exc:  # zlib.error, zstandard.ZstdError: damaged compressed data
        raise problems.fatal(
            None, info.filename, f"the archive is damaged ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
        ) from None


def _decompressed(data: _MemberData, method: int, problems: Problems, name: str):
    """The sizes of the pieces a member decompresses to, each at most _CHUNK bytes."""
    if method == _STORED:
        while piece := data.read(_CHUNK):
            yield len(piece)
    elif method == _DEFLATED:
        inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        while not inflate.eof:
            compressed = inflate.unconsumed_tail or data.read(_CHUNK)
            piece = inflate.decompress(compressed, _CHUNK)  # at most _CHUNK out; the rest waits in unconsumed_tail
            if not compressed and not piece:
                break
            yield len(piece)
    elif method == _ZSTD:
        import zstandard  # inspect_ai's dependency: it writes .eval members with zstd

        # zstandard reads any object with read(); its stub asks for IO[bytes].
        with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:  # type: ignore[arg-type]
            while piece := reader.read(_CHUNK):
                yield len(piece)
    else:
        raise problems.fatal(
            None, name, f"this member is compressed with method {method}; Inspect AI logs use zstd or deflate"
        )
