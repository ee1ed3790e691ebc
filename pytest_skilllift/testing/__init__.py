"""A scripted stand-in of the Anthropic Messages API, for tests, the demo and users' own tests."""
