"""Fakes that speak real protocols, shared by the test suites and the benchmarks."""
