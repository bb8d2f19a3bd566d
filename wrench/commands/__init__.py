"""The operator's commands beyond the three processes: run, doctor, jobs, retry and cancel."""


class CommandError(Exception):
    """A command cannot go on; the message says why and what to do."""
