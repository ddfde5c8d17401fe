"""The one error type a user can cause; the CLI prints it as one line."""

from __future__ import annotations


class PamdError(Exception):
    """An error with a message fit for `pamd: error: ...` and an optional next step."""

    def __init__(self, message: str, hint: str = "", exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message
