"""Importers of real history into incident logs (one module per source)."""
