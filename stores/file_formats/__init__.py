"""Readers of file formats: what turns a file (HTML, PDF, man page, Markdown, JSONL/BEIR) into records."""
