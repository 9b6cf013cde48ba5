"""Tests of the cp family, named after the modules they test."""
