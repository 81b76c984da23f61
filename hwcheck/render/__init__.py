"""Renderers: turn facts and a recommendation into something to read."""
