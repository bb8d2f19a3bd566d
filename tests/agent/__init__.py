"""Tests of the agent loop: tools, limits, model errors and the trajectory."""
