"""The worker: rq jobs that take a trigger to a pull request or a comment."""
