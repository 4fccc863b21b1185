"""CSV cells that a spreadsheet opens as text, never as a formula, and back: the exports write them (formats'
exports, the calibration report's CSV), the CSV reader takes them back."""

from __future__ import annotations

# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection": =, +, -, @, and
# tab and carriage return, which some spreadsheets skip before looking). Spreadsheets also skip spaces and line
# breaks before the formula character (" =1+1", "\n=HYPERLINK(...)" run too), so a cell whose first character
# after any whitespace is one of them counts as well. Exports put a single quote before such a cell, which
# spreadsheets show as text; a cell that itself starts with a quote gets one more, so that the importers can
# take exactly one quote away again and every value comes back as it was.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_CHARACTERS = ("=", "+", "-", "@")


def needs_quote(cell: str) -> bool:
    """True for a cell a spreadsheet could run (or one that starts with a quote): csv_safe puts a quote before it."""
    return cell.startswith((*FORMULA_STARTS, "'")) or cell.lstrip().startswith(_FORMULA_CHARACTERS)


def csv_safe(cell: str) -> str:
    """The cell as an export writes it: "'" before a cell that needs_quote."""
    return "'" + cell if needs_quote(cell) else cell


def csv_unsafe(cell: str) -> str:
    """What csv_safe undoes: one leading quote comes off when what follows it needs_quote (a formula character,
    perhaps after whitespace, or another quote).

    A cell such as "'tis" (a quote before anything else) is left alone, so a file from elsewhere reads as written.
    """
    return cell[1:] if cell.startswith("'") and needs_quote(cell[1:]) else cell
