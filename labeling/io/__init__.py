"""Import and export of rubrics, cases, outputs, labels and gold labels.

The management commands and the upload page call the same functions:
`import_rubric`, `import_cases`, `import_labels` and `export_data`. Every
import is atomic (a bad file writes nothing; ImportFailed lists up to
MAX_PROBLEMS problems, each with file, line and field) and idempotent
(importing the same file twice changes nothing). Formats: docs/formats.md.
"""

from __future__ import annotations

from .cases import import_cases
from .errors import MAX_PROBLEMS, ImportFailed, Problem
from .export import ExportError, export_data
from .labels import import_labels
from .readers import Source, open_source
from .report import ImportReport
from .rubrics import import_rubric

__all__ = [
    "MAX_PROBLEMS",
    "ExportError",
    "ImportFailed",
    "ImportReport",
    "Problem",
    "Source",
    "export_data",
    "import_cases",
    "import_labels",
    "import_rubric",
    "open_source",
]
