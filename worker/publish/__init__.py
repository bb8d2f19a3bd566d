"""Publishing the agent's work: the secret scan over what would leave, then a pull request, a
commit on one, a diff for a fork, or an answer."""

from worker.publish.flow import Outcome, PublishRefused, Target, Work, publish

__all__ = ["Outcome", "PublishRefused", "Target", "Work", "publish"]
