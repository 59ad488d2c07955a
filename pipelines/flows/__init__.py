"""Prefect flows: they orchestrate the plain functions of `pipelines` and hold no logic."""
