"""ikictl's name for the client library's autostart (ikigai._autostart)."""

from ikigai._autostart import REASON_BYTES, REASON_LINES, _reason, answers, log_dir, start_daemon

__all__ = ["REASON_BYTES", "REASON_LINES", "_reason", "answers", "log_dir", "start_daemon"]
