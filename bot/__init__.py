"""The web tier: verify, route, enqueue, answer. It never imports litellm or docker."""
