"""Tests for agent.providers: the contract, the scripted providers and the HTTP providers."""
