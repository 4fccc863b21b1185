"""Downloads: the Content-Disposition of a file whose name holds user-chosen names. A download's name is a field
we write, with the same care as a CSV cell (evals/csv_cells.py)."""

from __future__ import annotations

from urllib.parse import quote

from django.utils.http import content_disposition_header


def attachment_header(file_name: str) -> str:
    """The Content-Disposition of a download whose name holds user-chosen names (eval set, rubric, judge).

    Control characters (a CR/LF would end the header), quotes and path separators become "_"; a name that
    is still not plain ASCII gets an ASCII stand-in in `filename` and the exact name in `filename*` (RFC 6266).
    """
    clean = "".join("_" if not c.isprintable() or c in '"\\/' else c for c in file_name)
    ascii_name = "".join(c if " " <= c <= "~" else "_" for c in clean)
    header = content_disposition_header(as_attachment=True, filename=ascii_name)
    return header if ascii_name == clean else f"{header}; filename*=utf-8''{quote(clean)}"
