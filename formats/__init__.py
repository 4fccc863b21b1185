"""Data in and out: one reader per format, the writers, import jobs, exports, the Import page and the commands.

The management commands, the Import page, the API's pushes and the import jobs call the same importers
(`case_import.import_cases`, `label_import.import_labels`, `rubric_import.import_rubric`,
`verdicts.import_verdicts`) and exporters (`export.export_data`, `verdicts.export_data`). Every import is
atomic (a bad file writes nothing; ImportFailed lists up to MAX_PROBLEMS problems, each with file, line and
field) and idempotent (importing the same file twice changes nothing). Formats: docs/formats.md.
"""
