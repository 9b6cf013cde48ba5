"""Tests of the queues family, named after the modules they test."""
