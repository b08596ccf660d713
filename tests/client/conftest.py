"""The client library against the real daemon: the ikictl suite's fixtures
(a real ikigaid subprocess in a temp IKIGAI_HOME, the fake provider process)."""

from tests.ikictl.conftest import Daemon, daemon, fake_url, home  # noqa: F401
