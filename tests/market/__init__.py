"""Tests of the market family, named after the modules they test."""
