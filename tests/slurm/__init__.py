"""Tests of the slurm family, named after the modules they test."""
