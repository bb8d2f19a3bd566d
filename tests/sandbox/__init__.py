"""Tests of the sandbox package."""
