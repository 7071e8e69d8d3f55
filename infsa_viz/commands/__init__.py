"""Subcommand modules of the ``infsa-viz`` CLI (see :mod:`infsa_viz.cli`)."""
