"""Helpers the tests share: toy components, recording contexts, servers, fixtures."""
