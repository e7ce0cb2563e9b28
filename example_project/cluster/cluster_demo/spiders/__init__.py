"""Spiders of the cluster demo."""
