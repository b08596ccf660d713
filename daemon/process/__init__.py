"""The ikigaid process: command line (``cli``), start-up, signals, reload and
readiness (``service``), the one-daemon-per-database lock (``lock``) and the
log files (``logs``). Where files live is ``protocol.paths``: clients need it too."""
