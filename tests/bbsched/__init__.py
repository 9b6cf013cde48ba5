"""Tests of the bbsched family, named after the modules they test."""
