"""pamd: an AI agent's memory kept as a git repository of frontmatter Markdown.

The packages, bottom up; a module imports only from its own layer or one below
(tests/test_layers.py holds the order and checks every import):

- core: pure functions of their inputs: the brain's file names (paths), entries and
  their files (entry, fmt), config, secret patterns (redact), the packaged templates;
  and what a person sees on a terminal (visible, console: the entry points' log lines)
- edge: the outside world: git, the brain on disk and its transactions, the lock,
  files, a file named on a command line (refs), worktrees, history, lineage, the clock
- encode: transcripts into entries (ingest, tagging, scoring)
- consolidate, recall, myelin: the pipeline after ingest: summarise and tier, search,
  what the agent reads first
- ops, fidelity: whole-brain operations: init, check, fsck, status, sync, synapse,
  redaction, the git hooks' work, fidelity evaluation
- agent: what an agent calls: its tools, the MCP server, the Claude Code hooks
- cli, commands, hooks: the entry points; a command parses, calls the library, prints,
  and imports no other command (what two share is library code)
"""

import logging

__version__ = "0.7.0"

# A library prints nothing unless its user asks: pamd's records reach only the handlers a
# program installs (the CLI's: pamd.core.console), not Python's last-resort stderr handler.
logging.getLogger(__name__).addHandler(logging.NullHandler())
