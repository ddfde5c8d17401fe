"""pamd: an AI agent's memory kept as a git repository of frontmatter Markdown."""

__version__ = "0.7.0"
