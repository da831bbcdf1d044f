"""The one exception type users see: a message that says what, where and what to do."""


class ZyncError(Exception):
    """An error the user can act on; the CLI prints its message without a traceback."""
