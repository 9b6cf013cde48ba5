"""Tests of the rl family, named after the modules they test."""
