"""Maintainer scripts (not installed): run each as ``python scripts/<name>.py`` from the repository root.

A package only so that the tests can ``import scripts.<name>``.
"""
