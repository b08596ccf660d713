"""The control methods, one module per family:

- ``api``: the ``Api`` that resolves agent references, maps refusals to error
  codes and puts every family's handlers in one table;
- ``agents``: agent.create / list / show / prompt / subscribe / cancel / kill /
  fork / set_model / set_system / set_priority / set_policy (``attachments``:
  agent.prompt's pictures, checked);
- ``history``: agent.history / usage / clear / mark / rewind / compact
  (``blocks``: the history's blocks and turn facts, pure);
- ``admin``: agent.wait / rename / remove / prune;
- ``transfer``: agent.export / import;
- ``mail``: mail.send / inbox;  ``approvals``: agent.approve, approvals.list;
- ``mcp``: mcp.*;  ``daemon``: daemon.* , models.list, providers.*.
"""

from daemon.methods.api import Api, DaemonInfo

__all__ = ["Api", "DaemonInfo"]
