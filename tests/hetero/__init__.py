"""Tests of the hetero family, named after the modules they test."""
