"""Normalized provider model and wire adapters. Knows nothing of agents or SQL."""
