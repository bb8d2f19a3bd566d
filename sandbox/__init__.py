"""The sandbox: a hardened container where the agent's commands run."""
