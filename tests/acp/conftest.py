"""The ikictl tests' fixtures for the ACP tests: the fake provider as its own
process (``fake_url``), a module's daemon on it (``daemon``, yolo), and a fresh
IKIGAI_HOME with no daemon yet (``home``)."""

from tests.ikictl.conftest import daemon, fake_url, home

__all__ = ["daemon", "fake_url", "home"]
