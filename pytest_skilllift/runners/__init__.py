"""Runners execute one Claude Code run in a fresh environment."""
