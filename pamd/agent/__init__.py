"""What pamd gives an agent host: the tools (recall, remember, expand, boot, touch, status),
the MCP server that serves them, and the Claude Code hooks."""
